package flow

import "time"

// SetWaitPoll sets how often c's Wait calls read the state of the jobs
// they wait for (WaitPoll), for the Wait calls that start a subscriber
// from now on. Set it before the first Wait.
func SetWaitPoll(c *Client, d time.Duration) { c.waits.setPoll(d) }
