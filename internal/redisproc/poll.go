package redisproc

import "time"

// Poll calls cond every few milliseconds until it holds (true) or timeout
// passes (false, with cond's last description).
func Poll(timeout time.Duration, cond func() (bool, string)) (bool, string) {
	deadline := time.Now().Add(timeout)
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, last := cond()
		if ok {
			return true, ""
		}
		if time.Now().After(deadline) {
			return false, last
		}
		<-tick.C
	}
}
