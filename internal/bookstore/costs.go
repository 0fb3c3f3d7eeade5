package bookstore

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
)

// CostConfig describes a measurement of what each interaction costs alone: one
// session, one connection, no think time, one class at a time.
type CostConfig struct {
	// DSN is as in Config.
	DSN string
	// Rounds is the number of passes over the 14 interactions. Zero means 3.
	Rounds int
	// PerClass is the number of runs of an interaction in a row, per round. Zero means 30.
	PerClass int
	// Seed drives the random choices.
	Seed int64
	// BestSellersWindow and RelatedWindow are as in Config; zero means the same defaults.
	BestSellersWindow, RelatedWindow int
}

// Cost is what one interaction cost alone.
type Cost struct {
	Interaction Interaction
	Samples     int
	Mean, P50   time.Duration
	Min, Max    time.Duration
}

// Costs is the result of MeasureCosts.
type Costs struct {
	Config  CostConfig
	Classes []Cost
}

// MeasureCosts runs each interaction alone, in isolation (the Gatekeeper paper's "no
// load" row of Table 1): after a warm-up pass, cfg.Rounds rounds of cfg.PerClass runs
// of each interaction in a row on one connection. Any error ends the measurement.
func MeasureCosts(ctx context.Context, cfg CostConfig) (*Costs, error) {
	if cfg.DSN == "" {
		return nil, fmt.Errorf("no DSN; give one like user:password@tcp(127.0.0.1:3306)/bookstore")
	}
	if cfg.Rounds == 0 {
		cfg.Rounds = 3
	}
	if cfg.PerClass == 0 {
		cfg.PerClass = 30
	}
	if cfg.BestSellersWindow == 0 {
		cfg.BestSellersWindow = DefaultBestSellersWindow
	}
	if cfg.RelatedWindow == 0 {
		cfg.RelatedWindow = DefaultRelatedWindow
	}
	if cfg.Rounds < 0 || cfg.PerClass < 0 || cfg.BestSellersWindow < 0 || cfg.RelatedWindow < 0 {
		return nil, fmt.Errorf("rounds, per-class runs and windows cannot be negative")
	}
	db, err := openDB(cfg.DSN, 1)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	st, err := readStore(ctx, db, cfg.BestSellersWindow, cfg.RelatedWindow)
	if err != nil {
		return nil, err
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, fmt.Errorf("connect: %w", err)
	}
	s := newSession(st, newRand(cfg.Seed, 999), 0)
	s.conn = conn
	defer s.release()

	samples := make([][]time.Duration, numInteractions)
	for round := -1; round < cfg.Rounds; round++ {
		n := cfg.PerClass
		if round < 0 {
			n = min(3, n) // warm-up, not counted
		}
		for _, in := range Interactions() {
			for range n {
				begin := time.Now()
				if err := s.do(ctx, in); err != nil {
					return nil, fmt.Errorf("%s: %w", in, err)
				}
				if round >= 0 {
					samples[in] = append(samples[in], time.Since(begin))
				}
			}
		}
	}
	out := &Costs{Config: cfg}
	for _, in := range Interactions() {
		d := samples[in]
		slices.Sort(d)
		c := Cost{Interaction: in, Samples: len(d)}
		if len(d) > 0 {
			var sum time.Duration
			for _, x := range d {
				sum += x
			}
			c.Mean, c.P50, c.Min, c.Max = sum/time.Duration(len(d)), percentile(d, 50), d[0], d[len(d)-1]
		}
		out.Classes = append(out.Classes, c)
	}
	return out, nil
}

// WriteTable writes the costs as a markdown table, a row per interaction with its
// frequency in the shopping mix, like Table 1 of the Gatekeeper paper.
func (c *Costs) WriteTable(w io.Writer) error {
	shopping, _ := MixByName("shopping")
	var home time.Duration
	lo, hi := time.Duration(0), time.Duration(0)
	for _, x := range c.Classes {
		if x.Interaction == Home {
			home = x.Mean
		}
		if x.Mean > 0 && (lo == 0 || x.Mean < lo) {
			lo = x.Mean
		}
		hi = max(hi, x.Mean)
	}
	var b strings.Builder
	b.WriteString("| interaction | heavy | runs | mean ms | p50 ms | min ms | max ms | mean / home | shopping mix % |\n")
	b.WriteString("|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	for _, x := range c.Classes {
		heavy := ""
		if x.Interaction.Heavy() {
			heavy = "yes"
		}
		ratio := "-"
		if home > 0 {
			ratio = fmt.Sprintf("%.1f", float64(x.Mean)/float64(home))
		}
		fmt.Fprintf(&b, "| %s | %s | %d | %s | %s | %s | %s | %s | %.2f |\n", x.Interaction, heavy, x.Samples,
			msText(x.Mean), msText(x.P50), msText(x.Min), msText(x.Max), ratio, shopping.Weights[x.Interaction])
	}
	if lo > 0 {
		fmt.Fprintf(&b, "\nThe most expensive interaction costs %.0f times the cheapest (means).\n", float64(hi)/float64(lo))
	}
	_, err := io.WriteString(w, b.String())
	return err
}
