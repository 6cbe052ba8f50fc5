package web

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/sluicehq/sluice/flow"
	"github.com/sluicehq/sluice/flow/admin"
	"github.com/sluicehq/sluice/internal/jobview"
	"github.com/sluicehq/sluice/internal/msgview"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// pageNames are the templates/<name>.html files, each rendered inside
// templates/layout.html.
var pageNames = []string{"overview", "queue", "job", "workers", "schedules", "effects", "confirm", "login", "error"}

// pages holds one parsed template set per page.
type pages struct {
	sets map[string]*template.Template
}

func loadPages() (*pages, error) {
	p := &pages{sets: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New("layout.html").Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("sluice web: template %s: %w", name, err)
		}
		p.sets[name] = t
	}
	return p, nil
}

func staticHandler() http.Handler {
	sub, _ := fs.Sub(staticFS, "static")
	files := http.FileServerFS(sub)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "public, max-age=300")
		files.ServeHTTP(w, r)
	})
}

// view is what every page's template receives.
type view struct {
	Title    string
	Nav      string // the section of the navigation bar to mark
	P        string // the console's path prefix
	CSRF     string
	ReadOnly bool
	HideArgs bool
	Auth     bool // a session may log out
	Flash    string
	Live     string // the job the page follows live, "" for none
	// Now is Redis's time as the page is made, which the page's script
	// counts the ages of the times shown from (the times are Redis's, the
	// viewer's clock may be off from it); zero when it could not be read.
	Now  time.Time
	Data any
}

// showsTimes are the pages that show times with their ages: made with
// Redis's time (view.Now), one more round trip each.
var showsTimes = map[string]bool{"overview": true, "queue": true, "job": true, "workers": true, "schedules": true, "effects": true}

// render writes page name with data, status code and the common view.
func (c *console) render(w http.ResponseWriter, r *http.Request, code int, name, title string, data any) {
	v := view{Title: title, Nav: name, P: c.o.Prefix, CSRF: c.csrfToken(w, r), ReadOnly: c.o.ReadOnly,
		HideArgs: c.o.HideArgs, Auth: c.o.Token != "", Flash: c.takeFlash(w, r), Data: data}
	if j, ok := data.(*jobView); ok {
		v.Live = j.Job.ID
	}
	if showsTimes[name] {
		now, err := c.ops.StoreTime(r.Context())
		if err != nil {
			c.o.Logger.Warn("sluice web: reading Redis's time: the page's ages count from the viewer's clock", "page", name, "err", err)
		}
		v.Now = now
	}
	var buf bytes.Buffer
	if err := c.pages.sets[name].ExecuteTemplate(&buf, "layout.html", v); err != nil {
		c.o.Logger.Error("sluice web: render", "page", name, "err", err)
		http.Error(w, "sluice web: could not render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(code)
	w.Write(buf.Bytes())
}

// fail renders the error page for err.
func (c *console) fail(w http.ResponseWriter, r *http.Request, err error) {
	code := statusOf(err)
	if code == http.StatusInternalServerError {
		c.o.Logger.Error("sluice web", "path", r.URL.Path, "err", err)
	}
	c.render(w, r, code, "error", http.StatusText(code), map[string]any{"Error": err.Error(), "Code": code})
}

// notFound renders the error page with 404 and msg: for what is not a job,
// queue, schedule or effect (whose errors fail renders).
func (c *console) notFound(w http.ResponseWriter, r *http.Request, msg string) {
	c.render(w, r, http.StatusNotFound, "error", http.StatusText(http.StatusNotFound),
		map[string]any{"Error": msg, "Code": http.StatusNotFound})
}

// maxShown bounds a decoded payload on a page.
const maxShown = 64 << 10

var funcs = template.FuncMap{
	"states": func() []string { return flow.States },
	"rfc3339": func(t time.Time) string {
		return t.UTC().Format(time.RFC3339Nano)
	},
	"utc": func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05Z") },
	"ms":  func(t time.Time) int64 { return t.UnixMilli() },
	"dur": func(d time.Duration) string {
		if d == 0 {
			return "—"
		}
		return d.Round(time.Millisecond).String()
	},
	"pretty":    pretty,
	"attempts":  jobview.Attempts,
	"esc":       url.PathEscape,
	"query":     url.QueryEscape,
	"join":      strings.Join,
	"itoa":      strconv.Itoa,
	"maxQueues": func() int { return admin.MaxQueuesListed },
	"i64":       func(n int64) string { return strconv.FormatInt(n, 10) },
	"pct":       func(f float64) string { return strconv.FormatFloat(f, 'f', 0, 64) },
	"spark":     spark,
	// narrow: the states a phone's overview leaves out
	"narrow": func(s string) bool {
		return s == flow.StateScheduled || s == flow.StateRetryable || s == flow.StateQuarantined || s == flow.StateCancelled
	},
	"terminal": terminal,
	"confirmq": confirmQuery,
	"dict": func(kv ...any) map[string]any {
		m := map[string]any{}
		for i := 0; i+1 < len(kv); i += 2 {
			m[fmt.Sprint(kv[i])] = kv[i+1]
		}
		return m
	},
}

// pretty shows msgpack b as indented JSON (or says why it cannot).
func pretty(b []byte) string {
	if len(b) == 0 {
		return "—"
	}
	v, err := msgview.Decode(b)
	if errors.Is(err, msgview.ErrTooDeep) {
		head := b[:min(len(b), 64)]
		return fmt.Sprintf("(%d bytes of msgpack nested more than %d levels deep, not decoded; it begins % x …)", len(b), msgview.MaxDepth, head)
	}
	if err != nil {
		return fmt.Sprintf("(%d bytes, not msgpack: %v)", len(b), err)
	}
	out, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return cut(fmt.Sprintf("%v", v))
	}
	return cut(string(out))
}

// cut bounds s to maxShown bytes (not splitting a character), and says
// so when it cuts.
func cut(s string) string {
	if len(s) <= maxShown {
		return s
	}
	s = strings.ToValidUTF8(s[:maxShown], "")
	return s + "\n… (cut at 64 KiB)"
}

// sparkLine is a queue's chart: SVG polyline points of completed and
// failed jobs per minute, in a 120x28 box.
type sparkLine struct {
	Done, Failed string
	Max          int64
}

func spark(series []point) sparkLine {
	var s sparkLine
	for _, p := range series {
		s.Max = max(s.Max, p[0], p[1])
	}
	line := func(k int) string {
		var b strings.Builder
		for i, p := range series {
			x := 0.0
			if len(series) > 1 {
				x = float64(i) * 120 / float64(len(series)-1)
			}
			y := 27.0
			if s.Max > 0 {
				y = 27 - float64(p[k])*26/float64(s.Max)
			}
			fmt.Fprintf(&b, "%.1f,%.1f ", x, y)
		}
		return strings.TrimSpace(b.String())
	}
	s.Done, s.Failed = line(0), line(1)
	return s
}
