package keys

// Schedules names the keys of a namespace's periodic schedules. They all
// share the hash tag {ns:sched}, apart from every queue partition's, so one
// script sees a schedule's definition, state and pending ticks together.
type Schedules struct{ NS string }

// Tag is the schedules' cluster hash tag, braces included.
func (s Schedules) Tag() string { return "{" + s.NS + ":sched}" }

// Prefix starts the schedules' own keys; the schedule script keeps its
// call records under it (lua/lib_replay.lua, as Partition.Call).
func (s Schedules) Prefix() string { return s.Tag() + ":" }

// Names is the set of the names of every schedule ever run.
func (s Schedules) Names() string { return s.Tag() + ":names" }

// Schedule is the hash of one schedule: its definition (as the last
// scheduler to start wrote it) and its state (last tick, paused).
func (s Schedules) Schedule(name string) string { return s.Tag() + ":s:" + name }

// Pending is the hash of one schedule's ticks claimed by a scheduler but
// not yet confirmed enqueued: tick (unix ms) -> claim time (unix ms).
func (s Schedules) Pending(name string) string { return s.Tag() + ":p:" + name }
