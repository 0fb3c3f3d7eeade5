// Package results holds the benchmark results: one directory or page per run, indexed by
// README.md. It has no code; its test keeps the index honest: every result is in the index,
// every relative link in the index, in docs/benchmarks.md and in the results' own pages
// resolves, and every plot a page embeds is one of the few committed.
package results
