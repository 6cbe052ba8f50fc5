package main

import (
	"encoding/json"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/sluicehq/sluice/flow"
)

// jobsSignalCmd sends a signal to a job. The JSON payload is sent
// msgpack-encoded, as a map for an object: the wait decodes it into its
// type by field names, as msgpack does.
func (c *cli) jobsSignalCmd() *cobra.Command {
	var data, key string
	cmd := &cobra.Command{
		Use:     "signal ID NAME",
		Short:   "Send a signal to a workflow job",
		Example: `  sluice jobs signal orders:0:42 approved --data '{"By":"ann"}' --key approval-42`,
		Args:    nArgs("ID", "NAME"),
	}
	cmd.Flags().StringVar(&data, "data", "", "the signal's payload, as `JSON` (default: none)")
	cmd.Flags().StringVar(&key, "key", "", "an idempotency key `K`: a signal with the key of one sent to the job before is not kept again")
	cmd.RunE = c.runE(func(cmd *cobra.Command, args []string) error {
		id, name := args[0], args[1]
		var payload any
		if data != "" {
			if err := json.Unmarshal([]byte(data), &payload); err != nil {
				return usagef("--data: not JSON: %v", err)
			}
		}
		client, err := c.connect(cmd.Context())
		if err != nil {
			return err
		}
		res, err := client.Signal(cmd.Context(), id, name, payload, flow.WithSignalKey(key))
		if err != nil {
			return c.about("job", id, err)
		}
		result := "sent"
		if res.Duplicate {
			result = "duplicate"
		}
		if c.json {
			return writeJSON(c.stdout, map[string]string{"id": id, "signal": name, "result": result})
		}
		if res.Duplicate {
			fmt.Fprintf(c.stdout, "signal %s to %s not sent again: one with key %q was sent before\n", name, id, key)
			return nil
		}
		fmt.Fprintf(c.stdout, "sent signal %s to %s\n", name, id)
		return nil
	})
	return cmd
}
