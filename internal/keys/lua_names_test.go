package keys_test

import (
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/sluicehq/sluice/lua"
)

// preludeNames are the names the prelude's top-level 'local' statements
// define (as lua/prelude.go reads them).
func preludeNames(src string) map[string]bool {
	out := map[string]bool{}
	def := regexp.MustCompile(`(?m)^local (?:function ([A-Za-z_]\w*)|([A-Za-z_][\w, ]*?)\s*=)`)
	for _, m := range def.FindAllStringSubmatch(src, -1) {
		for n := range strings.SplitSeq(m[1]+m[2], ",") {
			out[strings.TrimSpace(n)] = true
		}
	}
	return out
}

// TestNamesRead: lib_names.lua's tables read (lua.Names is strict: an
// entry it cannot read fails here), and their keys are not names the
// prelude defines. lua/prelude.go takes any word of a definition's code
// for a use of the prelude local of that name, so a key F.priority beside
// a function priority would pull that function into every script that
// uses F, and order F after it.
func TestNamesRead(t *testing.T) {
	defined := preludeNames(lua.Prelude())
	if !defined["job_key"] || !defined["F"] || !defined["STATUS"] {
		t.Fatalf("the prelude's definitions were not read: %d names", len(defined))
	}
	for _, table := range []string{"F", "STATUS"} {
		names, err := lua.Names(table)
		if err != nil {
			t.Fatal(err)
		}
		if len(names) == 0 {
			t.Errorf("%s is empty", table)
		}
		for _, n := range names {
			if defined[n.Key] {
				t.Errorf("%s.%s: the prelude defines a local %s; give the entry another name", table, n.Key, n.Key)
			}
		}
	}
}

// luaCode is src with its comments blanked out (line breaks kept, so
// offsets keep their line numbers).
func luaCode(src string) string {
	b := []byte(src)
	for i := 0; i < len(b); i++ {
		switch c := b[i]; {
		case c == '\'' || c == '"':
			for i++; i < len(b) && b[i] != c && b[i] != '\n'; i++ {
				if b[i] == '\\' {
					i++
				}
			}
		case c == '-' && i+1 < len(b) && b[i+1] == '-':
			for ; i < len(b) && b[i] != '\n'; i++ {
				b[i] = ' '
			}
		}
	}
	return string(b)
}

// callArgs splits the arguments of the call whose '(' is just before
// code[start:] at the top-level commas, trimmed.
func callArgs(code string, start int) []string {
	var args []string
	depth, from := 0, start
	for i := start; i < len(code); i++ {
		switch c := code[i]; c {
		case '\'', '"':
			for i++; i < len(code) && code[i] != c; i++ {
				if code[i] == '\\' {
					i++
				}
			}
		case '(', '{', '[':
			depth++
		case ')', '}', ']':
			if depth == 0 {
				return append(args, strings.TrimSpace(code[from:i]))
			}
			depth--
		case ',':
			if depth == 0 {
				args = append(args, strings.TrimSpace(code[from:i]))
				from = i + 1
			}
		}
	}
	return args
}

// hashFields says which arguments after the key of a hash command name
// fields: "one" the first, "all" each, "pairs" every other from the
// first (HSET field value ...).
var hashFields = map[string]string{
	"HGET": "one", "HMGET": "all", "HDEL": "all", "HSET": "pairs", "HMSET": "pairs", "HSETNX": "one",
	"HINCRBY": "one", "HINCRBYFLOAT": "one", "HEXISTS": "one", "HSTRLEN": "one",
}

var (
	redisCall  = regexp.MustCompile(`redis\.p?call\(`)
	quoted     = regexp.MustCompile(`^(?:'([^']*)'|"([^"]*)")$`)
	keyFromJob = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*=\s*job_key\(`)
	keyOther   = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*=\s*(?:[a-z_]+_key\(|KEYS\[)`)
	// a key helper written out where a call per job costs (step.lua):
	// PFX .. 'j:' .. id is a job hash, PFX .. '<other>:' .. id is not
	keyWritten = regexp.MustCompile(`\b([A-Za-z_]\w*)\s*=\s*PFX\s*\.\.\s*'([a-z]+):'\s*\.\.`)
	otherKey   = regexp.MustCompile(`^(?:[a-z_]+_key\(|KEYS\[|[A-Z][A-Z0-9_]*$)`)
)

// hashLiteral is a literal field name in a hash command of a script.
type hashLiteral struct {
	file  string
	line  int
	cmd   string
	key   string
	field string
	job   bool // the key is a job hash
}

// hashLiterals finds, in the file name of source src, every hash command
// (redis.call or redis.pcall) with a literal field name. It tells a job
// hash by its key: job_key(...), a name assigned job_key(...) in the same
// file, or jk (the prelude's name for a job hash parameter). Other keys
// must be recognisably other hashes (another *_key helper or a name
// assigned one, a KEYS entry, an upper-case constant, or the key of an
// effect); a key it cannot place is reported in unknown. jobCalls counts
// the hash commands on job hashes it read.
func hashLiterals(name, src string) (found []hashLiteral, unknown []string, jobCalls int) {
	code := luaCode(src)
	jobs, others := map[string]bool{"jk": true}, map[string]bool{"key": true, "e.key": true}
	for _, m := range keyFromJob.FindAllStringSubmatch(code, -1) {
		jobs[m[1]] = true
	}
	for _, m := range keyOther.FindAllStringSubmatch(code, -1) {
		others[m[1]] = true
	}
	for _, m := range keyWritten.FindAllStringSubmatch(code, -1) {
		if m[2] == "j" {
			jobs[m[1]] = true
		} else {
			others[m[1]] = true
		}
	}
	for _, loc := range redisCall.FindAllStringIndex(code, -1) {
		args := callArgs(code, loc[1])
		if len(args) < 2 {
			continue
		}
		m := quoted.FindStringSubmatch(args[0])
		if m == nil {
			continue // a command in a variable (effects, call_chunked)
		}
		cmd := strings.ToUpper(m[1] + m[2])
		which, ok := hashFields[cmd]
		if !ok {
			continue
		}
		line := strings.Count(code[:loc[0]], "\n") + 1
		key := args[1]
		var job bool
		switch {
		case strings.HasPrefix(key, "job_key(") || jobs[key]:
			job = true
			jobCalls++
		case others[key] || otherKey.MatchString(key):
		default:
			unknown = append(unknown, name+":"+strconv.Itoa(line)+": "+cmd+" on "+key)
			continue
		}
		for k, a := range args[2:] {
			if (which == "one" && k > 0) || (which == "pairs" && k%2 == 1) {
				continue
			}
			if q := quoted.FindStringSubmatch(a); q != nil {
				found = append(found, hashLiteral{file: name, line: line, cmd: cmd, key: key, field: q[1] + q[2], job: job})
			}
		}
	}
	return found, unknown, jobCalls
}

// TestNoLiteralJobFields: no script or prelude part names a field of a
// job hash by hand in a hash command (HGET, HMGET, HSET, HINCRBY, HDEL,
// ...): each uses F's entry (F.state, not 's'), or a local read from F,
// so that the fields are spelled once (lib_names.lua) and Go's
// keys.Field* constants can be checked against them.
func TestNoLiteralJobFields(t *testing.T) {
	fields, err := lua.Names("F")
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]string{}
	for _, f := range fields {
		entry[f.Value] = f.Key
	}
	calls := 0
	for _, name := range sortedFiles() {
		found, unknown, n := hashLiterals(name, lua.Files()[name])
		calls += n
		for _, u := range unknown {
			t.Errorf("%s: cannot tell whether this is a job hash; name its key with job_key or another *_key helper", u)
		}
		for _, l := range found {
			if !l.job {
				continue
			}
			if k, ok := entry[l.field]; ok {
				t.Errorf("%s:%d: %s %s names the job field '%s' by hand: use F.%s", l.file, l.line, l.cmd, l.key, l.field, k)
			} else {
				t.Errorf("%s:%d: %s %s names a job field '%s' that F does not list: add it to F (lua/lib_names.lua) and keys.Field*",
					l.file, l.line, l.cmd, l.key, l.field)
			}
		}
	}
	t.Logf("%d hash commands on job hashes", calls)
	if calls < 50 {
		t.Errorf("read %d hash commands on job hashes; the scan is missing them", calls)
	}
}

// TestHashLiteralsFinds: the scan of TestNoLiteralJobFields finds what it
// looks for, so that its passing means something: literal fields of job
// hashes in each form of key, and not those of other hashes, of comments,
// or of fields passed by name.
func TestHashLiteralsFinds(t *testing.T) {
	src := `local jk = job_key(id)
local pk = job_key(parent)
local bk = rate_key(class)
redis.call('HGET', jk, 's') -- redis.call('HGET', jk, 'x') in a comment
redis.pcall('HMGET', job_key(id), F.state, 'l', "f")
redis.call('HSET', pk, 'ws', 'a', F.wait_count, 'b')
redis.call('HINCRBY', jk, 'c', 1)
redis.call('HDEL', hk, 'qb')
redis.call('HSET', bk, 't', 1)
redis.call('HSET', K_STATS, 'running', 1)
redis.call('HGETALL', jk)
redis.call('HSET', jk, fs, 'running', ff, '1')
local wk = PFX .. 'j:' .. id
local sk = PFX .. 's:' .. id
redis.call('HGET', wk, 'w')
redis.call('HSETNX', sk, 'step', 'x')
`
	found, unknown, _ := hashLiterals("t.lua", src)
	var got []string
	for _, l := range found {
		if l.job {
			got = append(got, strconv.Itoa(l.line)+":"+l.cmd+":"+l.field)
		}
	}
	want := "4:HGET:s 5:HMGET:l 5:HMGET:f 6:HSET:ws 7:HINCRBY:c 15:HGET:w"
	if strings.Join(got, " ") != want {
		t.Errorf("job fields found: %q, want %q", strings.Join(got, " "), want)
	}
	if strings.Join(unknown, ";") != "t.lua:8: HDEL on hk" {
		t.Errorf("unknown keys: %q", unknown)
	}
}

// TestNoLiteralStatuses: scripts answer the statuses by STATUS's entries,
// never by hand: no answer (what a return, an entry of a reply list
// out[...] or lost[...], or a state answered, state = ..., is set to)
// starts with a literal that is a status, alone, first in a list, or
// after 'or'. The empty status (STATUS.none) is left out: an empty string
// is too common in data to tell.
func TestNoLiteralStatuses(t *testing.T) {
	statuses, err := lua.Names("STATUS")
	if err != nil {
		t.Fatal(err)
	}
	entry := map[string]string{}
	for _, s := range statuses {
		if !s.Number && s.Value != "" {
			entry[s.Value] = s.Key
		}
	}
	answer := regexp.MustCompile(`^\s*(?:return\b|(?:local\s+)?(?:out|lost|state)\b\s*(?:\[[^\]]*\])?\s*=[^=])`)
	lit := regexp.MustCompile(`(?:^\s*return|[^=~<>]=|\bor)\s*\{?\s*(?:'([^']*)'|"([^"]*)")`)
	for _, name := range sortedFiles() {
		if name == "lib_names.lua" {
			continue
		}
		for i, l := range strings.Split(luaCode(lua.Files()[name]), "\n") {
			if !answer.MatchString(l) {
				continue
			}
			for _, m := range lit.FindAllStringSubmatch(l, -1) {
				v := m[1] + m[2]
				if k, ok := entry[v]; ok {
					t.Errorf("%s:%d: the status %q by hand: use STATUS.%s", name, i+1, v, k)
				}
			}
		}
	}
}

// sortedFiles are the names of the embedded .lua files, in order.
func sortedFiles() []string {
	var out []string
	for n := range lua.Files() {
		out = append(out, n)
	}
	slices.Sort(out)
	return out
}

// TestScheduleTakesNoPartition: schedule.lua, whose keys are not a
// partition's, takes of the prelude only what needs no partition: the
// store's time, the statuses, count_of (a whole number of ms, its tick
// times') and the call records (lib_replay.lua, kept
// under the key prefix its calls carry as ARGV[2], as a partition's do,
// with the two ARGV entries declared beside it, and join, which packs
// them on miniredis). A word of its text that
// names another prelude definition (prelude.go takes it in, strings
// included) would make it read the partition's KEYS layout, and build
// tables it never uses, on every call.
func TestScheduleTakesNoPartition(t *testing.T) {
	src := lua.Source("schedule")
	own := lua.Files()["schedule.lua"]
	if !strings.HasSuffix(src, own) {
		t.Fatal("lua.Source(\"schedule\") does not end with schedule.lua")
	}
	var got []string
	for n := range preludeNames(strings.TrimSuffix(src, own)) {
		got = append(got, n)
	}
	slices.Sort(got)
	want := []string{"CALL_ID", "CALL_KEEP", "CALL_KEY", "CHAN", "COUNT_MAX", "MSGPACK", "NOW", "PART", "PFX", "STATUS",
		"count_of", "decode_reply", "encode_reply", "join", "now_ms", "pack_record", "remember", "replayed", "unpack_record"}
	if !slices.Equal(got, want) {
		t.Errorf("schedule.lua takes %v of the prelude, want %v", got, want)
	}
}
