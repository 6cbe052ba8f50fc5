package isolated

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/sluicehq/sluice/sluicetype"
	"github.com/vmihailenco/msgpack/v5"
)

// Version is the protocol version this package speaks: the first byte of
// every frame.
const Version = 1

// Frame types.
const (
	frameStart      = 'S' // parent -> child: the attempt (startMsg), first and once
	frameCheckpoint = 'C' // child -> parent: commit a step checkpoint (checkpointMsg)
	frameAnswer     = 'A' // parent -> child: what a checkpoint or confirmation did (answerMsg)
	frameConfirm    = 'K' // child -> parent: confirm the lease with Redis (confirmMsg), for a strict step
	frameReply      = 'R' // child -> parent: the attempt's outcome (replyMsg), last
)

// childFrames are the types of frame a child sends.
const childFrames = string(frameCheckpoint) + string(frameConfirm) + string(frameReply)

// headerLen is a frame's header: version, type, body length (big endian).
const headerLen = 6

// maxFrameIn bounds a frame the child accepts from its parent.
const maxFrameIn = 1 << 30

// errProtocol: a frame is malformed or unexpected.
var errProtocol = errors.New("isolated: protocol error")

// startMsg is the attempt the child runs: its identity, its job and the
// step checkpoints of earlier attempts.
type startMsg struct {
	NS           string    `msgpack:"ns"`
	ID           string    `msgpack:"id"`
	Queue        string    `msgpack:"queue"`
	Kind         string    `msgpack:"kind"`
	Payload      []byte    `msgpack:"payload"`
	Headers      []byte    `msgpack:"headers"`
	Priority     int       `msgpack:"priority"`
	Attempt      int       `msgpack:"attempt"`
	CrashAttempt int       `msgpack:"crash_attempt"`
	MaxAttempts  int       `msgpack:"max_attempts"`
	Fence        int64     `msgpack:"fence"`
	LeaseID      string    `msgpack:"lease_id"`
	Created      time.Time `msgpack:"created"`
	Claimed      time.Time `msgpack:"claimed"`
	Deadline     time.Time `msgpack:"deadline"`
	// Ends is when the worker will end the attempt (its timeout or the
	// job's deadline, whichever is first; zero for neither): the
	// handler's ctx.Deadline in the child, which is killed then.
	Ends time.Time `msgpack:"ends"`
	// LeaseMS is how long the attempt's lease has left, in ms, as the
	// worker reckons it when it starts the child (0: not said); answers
	// of seq 0 say it again each time a renewal moves it. A child that
	// reaches its end with no later word (its worker stopped or hung)
	// ends itself and its process group: another attempt of the job may
	// start once the lease is gone.
	LeaseMS    int64             `msgpack:"lease_ms,omitempty"`
	Orphan     sluicetype.Orphan `msgpack:"orphan"`
	Partitions map[string]int    `msgpack:"partitions"`
	Steps      map[string][]byte `msgpack:"steps"`
}

// checkpointMsg asks the parent to commit a step checkpoint with its
// effects, fenced by the parent's lease. Seq pairs it with its answer.
type checkpointMsg struct {
	Seq     uint64              `msgpack:"seq"`
	Field   string              `msgpack:"field"`
	Record  []byte              `msgpack:"record"`
	Mode    string              `msgpack:"mode"`
	Commit  string              `msgpack:"commit"`
	Effects []sluicetype.Effect `msgpack:"effects"`
}

// confirmMsg asks the parent to confirm with Redis that its attempt still
// holds the job, extending the lease (a strict step's boundary). Seq pairs
// it with its answer, from the checkpoints' sequence.
type confirmMsg struct {
	Seq uint64 `msgpack:"seq"`
}

// Answer codes of a failed checkpoint or confirmation.
const (
	answerStale  = "stale"  // the attempt lost its lease: nothing was written
	answerEffect = "effect" // an effect could not apply: nothing was written
	// answerInvalid: an effect is malformed (ErrInvalidEffect): nothing
	// was written. A child of an older release takes it as answerError.
	answerInvalid = "invalid"
	answerError   = "error" // anything else (Redis unreachable, ...)
)

// answerMsg is what a checkpoint or a confirmation did: nothing to say
// when it was committed or confirmed, Code and Error when nothing was
// written or the lease is not confirmed. An answer of seq 0, which no
// checkpoint has, says only LeaseMS: how long the lease has left since a
// renewal moved it (startMsg.LeaseMS).
type answerMsg struct {
	Seq     uint64 `msgpack:"seq"`
	Code    string `msgpack:"code"`
	Error   string `msgpack:"error"`
	LeaseMS int64  `msgpack:"lease_ms,omitempty"`
}

// Reply outcomes.
const (
	outcomeOK          = "ok"           // Result is the job's result
	outcomeError       = "error"        // Message: an ordinary error (attempt+1, retry)
	outcomeSnooze      = "snooze"       // run again after DelayMS, no attempt spent
	outcomeRateLimited = "rate_limited" // back after DelayMS, no attempt spent
	outcomeSkip        = "skip"         // archive; Message is the reason
	outcomeRevoke      = "revoke"       // cancel for good; Message is the reason
	outcomePark        = "park"         // archive with Reason (a bug: bad payload, changed steps)
	outcomePanic       = "panic"        // the handler panicked: a crash; Stack
	outcomeCrash       = "crash"        // the handler returned a *CrashError: Reason, Message, Stack
	outcomeSuspend     = "suspend"      // a workflow waits on Suspend's timers and signals
)

// replyMsg is the attempt's outcome. Complete are effects to commit with
// the job's completion (outcome ok only).
type replyMsg struct {
	Outcome  string                     `msgpack:"outcome"`
	Result   []byte                     `msgpack:"result"`
	Message  string                     `msgpack:"message"`
	Reason   string                     `msgpack:"reason"`
	DelayMS  int64                      `msgpack:"delay_ms"`
	Stack    []byte                     `msgpack:"stack"`
	Complete []sluicetype.Effect        `msgpack:"complete"`
	Suspend  *sluicetype.SuspendedError `msgpack:"suspend,omitempty"`
	// RetryMS (outcome error) is the delay before the retry that the
	// kind's retry policy in the child chose (flow.WithRetryPolicy,
	// runtime.RetryPolicy); absent when it has none, or fell back to the
	// worker's Backoff. A worker of a build before it ignores it.
	RetryMS *int64 `msgpack:"retry_ms,omitempty"`
	// Text (outcome park) is the returned error's message, wrappers
	// included, which a worker records for a park: Reason and Message
	// (the park's own cause) lose what the handler said around it. A
	// worker of a build before it ignores it; absent, the worker records
	// Reason and Message.
	Text string `msgpack:"text,omitempty"`
}

// writeFrame writes one frame: version, type, body length, msgpack body.
func writeFrame(w io.Writer, typ byte, msg any) error {
	body, err := msgpack.Marshal(msg)
	if err != nil {
		return err
	}
	buf := make([]byte, headerLen, headerLen+len(body))
	buf[0], buf[1] = Version, typ
	binary.BigEndian.PutUint32(buf[2:], uint32(len(body)))
	_, err = w.Write(append(buf, body...))
	return err
}

// readFrame reads one frame of a type in want whose body is at most
// limit bytes. A frame of another type is a protocol error, whatever
// length its header names (garbage, not output over a limit); a longer
// body is a *tooLongError (with nothing of it read); a clean end of
// stream before the frame is io.EOF.
func readFrame(r io.Reader, limit int, want string) (typ byte, body []byte, err error) {
	var h [headerLen]byte
	if _, err := io.ReadFull(r, h[:]); err != nil {
		if err == io.ErrUnexpectedEOF {
			return 0, nil, fmt.Errorf("%w: truncated frame header: %w", errProtocol, err)
		}
		return 0, nil, err
	}
	if h[0] != Version {
		return 0, nil, fmt.Errorf("%w: frame version %d, want %d", errProtocol, h[0], Version)
	}
	if !strings.ContainsRune(want, rune(h[1])) {
		return 0, nil, fmt.Errorf("%w: unexpected frame type %q", errProtocol, h[1])
	}
	n := binary.BigEndian.Uint32(h[2:])
	if int64(n) > int64(limit) {
		return 0, nil, &tooLongError{n: int64(n), limit: limit}
	}
	body = make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return 0, nil, fmt.Errorf("%w: truncated frame body: %w", errProtocol, err)
	}
	return h[1], body, nil
}

// tooLongError: a frame's body is longer than the reader accepts.
type tooLongError struct {
	n     int64
	limit int
}

func (e *tooLongError) Error() string {
	return fmt.Sprintf("isolated: a frame of %d bytes, with %d allowed", e.n, e.limit)
}

// decode decodes a frame body into msg.
func decode(body []byte, msg any) error {
	if err := msgpack.Unmarshal(body, msg); err != nil {
		return fmt.Errorf("%w: %v", errProtocol, err)
	}
	return nil
}
