// Package bookstore is a TPC-W-like online bookstore for MariaDB and MySQL: the
// workload the Gatekeeper paper (Elnikety et al., WWW 2004) drove its proxy with, as a
// library that loads the data, emulates the customers and measures what they see.
//
// # Data
//
// Load creates TPC-W's ten tables (item, author, customer, address, orders, order_line,
// cc_xacts, shopping_cart, shopping_cart_line, country) and fills them from a seeded
// generator: the same Scale loads the same rows. The sizes follow TPC-W's ratios from
// the numbers of items and customers. Rows go in as multi-row INSERTs of 256 KiB from
// four connections, the secondary indexes are built afterwards, and the tables are
// analyzed, so the default scale loads in seconds.
//
// # Interactions
//
// The 14 web interactions of TPC-W each issue the statements the specification gives
// for their page (see statements.go), every one tagged with a leading comment
// /* gk:type=best_sellers */ so that gatekeeper can learn a cost per interaction
// (classify.type_key: tag). Writes run in transactions, tagged BEGIN ... COMMIT, rolled
// back on an error. Statements are sent as text (interpolateParams), so the comment
// reaches the server.
//
// As in the paper's Table 1, costs span about three orders of magnitude: most
// interactions take a fraction of a millisecond alone, Search Results a few, and two
// are heavy because they rank items over a window of recent orders: Best Sellers (the
// 50 best-selling items of a subject in the last 10,000 orders) and Admin Confirm (the
// items most bought by the customers who bought this one in the last 30,000 orders).
// TPC-W's windows are 3,333 and 10,000 orders; they are three times longer here, so
// that on today's hardware the heavy interactions cost tens of milliseconds alone, as
// in the paper they cost a thousand times more than the light ones. Order lines are
// indexed by order only, so both read their window, and their cost follows from its
// length (Config.BestSellersWindow, Config.RelatedWindow).
//
// # Load generation
//
// Run drives the bookstore in one of two ways. In the closed loop, TPC-W's, each of
// Config.Clients emulated customers is a session on a connection of its own: it thinks
// for an exponential time, draws the next interaction from the mix's frequencies, runs
// it, and records it. A session keeps its customer, cart and last viewed item across
// interactions; a broken or refused connection is counted and replaced at its next
// interaction. In the open loop, interactions arrive as a Poisson process at
// Config.Rate, or bursty, as a two-state Markov-modulated Poisson process (the kind of
// Markovian arrival process the AWAIT paper drives TPC-W with); each arrival runs one
// interaction on a pooled connection, and an arrival that finds Config.Clients
// interactions outstanding is refused and counted as overflow.
//
// Accounting is complete: every interaction that starts (or arrives) in the measured
// period ends as completed, failed, refused (an error from gatekeeper, whose messages
// start with "gatekeeper:", or overflow) or timed out, per class; only the warm-up is
// left out. A response time runs from the start of the interaction, or its arrival in
// the open loop, to its end. Each client records into its own recorder; samples are
// merged and sorted once when the run ends.
//
// The package sits under internal/ rather than bench/ because the daemon uses it too:
// gatekeeper calibrate drives the bookstore's customers to measure a backend. The
// benchmark commands in the bench module (bench/cmd/bookstore, bench/cmd/scenario) import
// it from there, so the product module never depends on bench/.
package bookstore
