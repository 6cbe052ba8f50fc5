package main

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/sluicehq/sluice/flow"
)

// jobsSignal sends a signal to a job: jobs signal ID NAME [--data JSON]
// [--key K].
// The JSON payload is sent msgpack-encoded, as a map for an object: the
// wait decodes it into its type by field names, as msgpack does.
func (c *cli) jobsSignal(ctx context.Context, args []string) error {
	fs := c.flags("jobs signal")
	data := fs.String("data", "", "the signal's payload, as JSON (default: none)")
	key := fs.String("key", "", "an idempotency key: a signal with the key of one sent to the job before is not kept again")
	rest, err := parse(fs, args)
	if err != nil {
		return err
	}
	if len(rest) != 2 {
		return usagef("jobs signal ID NAME [--data JSON] [--key K]")
	}
	var payload any
	if *data != "" {
		if err := json.Unmarshal([]byte(*data), &payload); err != nil {
			return usagef("--data: not JSON: %v", err)
		}
	}
	client, err := c.connect(ctx)
	if err != nil {
		return err
	}
	if err := client.Signal(ctx, rest[0], rest[1], payload, flow.WithSignalKey(*key)); err != nil {
		return err
	}
	if c.json {
		return writeJSON(c.stdout, map[string]string{"id": rest[0], "signal": rest[1], "result": "sent"})
	}
	fmt.Fprintf(c.stdout, "sent signal %s to %s\n", rest[1], rest[0])
	return nil
}
