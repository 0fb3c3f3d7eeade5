package estimator_test

import (
	"fmt"
	"time"

	"github.com/gatekeeperdb/gatekeeper/internal/estimator"
)

func Example() {
	table, err := estimator.New(estimator.Config{Weight: 0.5, DefaultCost: 5 * time.Millisecond})
	if err != nil {
		panic(err)
	}
	const checkout = estimator.Key(0x9f86d081884c7d65)

	// Before any sample, admission charges the default.
	fmt.Println(table.Estimate(checkout))

	// The session layer records what each unit of the type cost the backend.
	for _, cost := range []time.Duration{40 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond} {
		table.Record(checkout, []byte("SELECT * FROM cart WHERE session = ?"), cost)
	}
	fmt.Println(table.Estimate(checkout))

	for _, ts := range table.Snapshot() {
		fmt.Println(ts.Name, ts.Count, ts.Mean, ts.Sample)
	}
	// Output:
	// 5ms
	// 25ms
	// 9f86d081884c7d65 3 25ms SELECT * FROM cart WHERE session = ?
}
