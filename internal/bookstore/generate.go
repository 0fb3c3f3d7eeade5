package bookstore

import (
	"fmt"
	"math/rand/v2"
	"strconv"
	"time"
)

// Scale is the size of the bookstore and the seed its data is drawn from. The other
// tables follow from these two as in TPC-W: an author for every four items, two
// addresses per customer, 0.9 orders per customer with 1 to 5 lines each, a credit card
// transaction per order, 92 countries. The same Scale loads the same data.
type Scale struct {
	// Items is the number of books. Zero means 10,000, the size the Gatekeeper paper used.
	Items int
	// Customers is the number of registered customers. Zero means 57,600 (TPC-W's 2,880
	// per emulated browser, for 20 of them).
	Customers int
	// Seed picks the data; the same seed loads the same rows.
	Seed int64
}

// DefaultScale is 10,000 items and 57,600 customers: 51,840 orders with about 155,000
// lines, 445,000 rows in all, about 100 MB in InnoDB. It loads in 5 to 10 s on a 2-core
// machine and fits a 256 MB buffer pool (bench/results/bookstore-costs.md).
func DefaultScale() Scale {
	return Scale{Items: 10000, Customers: 57600, Seed: 1}
}

// withDefaults fills the zero fields.
func (s Scale) withDefaults() Scale {
	d := DefaultScale()
	if s.Items == 0 {
		s.Items = d.Items
	}
	if s.Customers == 0 {
		s.Customers = d.Customers
	}
	return s
}

func (s Scale) validate() error {
	if s.Items < 10 {
		return fmt.Errorf("scale: items is %d; use at least 10 (each item has 5 related items)", s.Items)
	}
	if s.Customers < 10 {
		return fmt.Errorf("scale: customers is %d; use at least 10", s.Customers)
	}
	return nil
}

// Authors is the number of authors, one for every four items.
func (s Scale) Authors() int { return max(1, s.Items/4) }

// Addresses is the number of addresses, two per customer.
func (s Scale) Addresses() int { return 2 * s.Customers }

// Orders is the number of orders loaded, 0.9 per customer.
func (s Scale) Orders() int { return s.Customers * 9 / 10 }

// numCountries is TPC-W's fixed number of countries.
const numCountries = 92

// subjects are TPC-W's 24 book subjects.
var subjects = []string{
	"ARTS", "BIOGRAPHIES", "BUSINESS", "CHILDREN", "COMPUTERS", "COOKING", "HEALTH",
	"HISTORY", "HOME", "HUMOR", "LITERATURE", "MYSTERY", "NON-FICTION", "PARENTING",
	"POLITICS", "REFERENCE", "RELIGION", "ROMANCE", "SELF-HELP", "SCIENCE-NATURE",
	"SCIENCE-FICTION", "SPORTS", "YOUTH", "TRAVEL",
}

var (
	backings   = []string{"HARDBACK", "PAPERBACK", "USED", "AUDIO", "LIMITED-EDITION"}
	shipTypes  = []string{"AIR", "UPS", "FEDEX", "SHIP", "COURIER", "MAIL"}
	orderState = []string{"PROCESSING", "SHIPPED", "PENDING", "DENIED"}
	cardTypes  = []string{"VISA", "MASTERCARD", "DISCOVER", "AMEX", "DINERS"}
)

// syllables spell numbers as names, one syllable per decimal digit (TPC-W's DigSyl):
// user names, author names and title words are numbers spelled this way, so a search
// string drawn the same way finds something.
var syllables = [10]string{"BA", "OG", "AL", "RI", "RE", "SE", "AT", "UL", "IN", "NG"}

// appendSyllables spells n with at least minDigits digits (leading zeros spelled too).
func appendSyllables(b []byte, n uint64, minDigits int) []byte {
	var digits [20]byte
	i := len(digits)
	for n > 0 || len(digits)-i < minDigits || i == len(digits) {
		i--
		digits[i] = byte(n % 10)
		n /= 10
	}
	for _, d := range digits[i:] {
		b = append(b, syllables[d]...)
	}
	return b
}

// epoch is "now" for the generated data: the most recent order is placed at epoch, and
// every date is drawn relative to it, so the data does not depend on when it is loaded.
var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// Streams of the random generator, one per group of tables, so that each group draws the
// same values however the groups are scheduled.
const (
	streamCatalog = iota + 1
	streamCustomers
	streamAddresses
	streamOrders
)

func newRand(seed int64, stream uint64) *rand.Rand {
	return rand.New(rand.NewPCG(uint64(seed), stream))
}

// batchBytes is the size at which a multi-row INSERT is sent.
const batchBytes = 256 << 10

// inserter builds multi-row INSERT statements for one table and hands each full one to
// emit. emit owns the slice it gets.
type inserter struct {
	head string
	buf  []byte
	rows int
	// sep: a value was written in the current row, so the next one needs a comma.
	sep  bool
	emit func([]byte) error
}

func newInserter(table string, emit func([]byte) error) *inserter {
	return &inserter{head: "INSERT INTO " + table + " VALUES ", emit: emit}
}

// begin starts a row.
func (in *inserter) begin() {
	if in.rows == 0 {
		in.buf = append(make([]byte, 0, batchBytes+8<<10), in.head...)
	} else {
		in.buf = append(in.buf, ',')
	}
	in.buf = append(in.buf, '(')
	in.sep = false
}

// end finishes a row and sends the statement when it is big enough.
func (in *inserter) end() error {
	in.buf = append(in.buf, ')')
	in.rows++
	if len(in.buf) >= batchBytes {
		return in.flush()
	}
	return nil
}

// flush sends what is pending.
func (in *inserter) flush() error {
	if in.rows == 0 {
		return nil
	}
	b := in.buf
	in.buf, in.rows = nil, 0
	return in.emit(b)
}

func (in *inserter) comma() {
	if in.sep {
		in.buf = append(in.buf, ',')
	}
	in.sep = true
}

func (in *inserter) int(v int) {
	in.comma()
	in.buf = strconv.AppendInt(in.buf, int64(v), 10)
}

// cents writes v/100 with two decimals.
func (in *inserter) cents(v int) {
	in.comma()
	in.buf = strconv.AppendInt(in.buf, int64(v/100), 10)
	in.buf = append(in.buf, '.', byte('0'+v%100/10), byte('0'+v%10))
}

// str writes a quoted string; s is one of the package's own constants or generated
// text, without quotes or backslashes.
func (in *inserter) str(s string) {
	in.comma()
	in.buf = append(in.buf, '\'')
	in.buf = append(in.buf, s...)
	in.buf = append(in.buf, '\'')
}

// alpha writes a quoted random string of letters and digits, n long.
func (in *inserter) alpha(r *rand.Rand, n int) {
	const chars = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	in.comma()
	in.buf = append(in.buf, '\'')
	for range n {
		in.buf = append(in.buf, chars[r.IntN(len(chars))])
	}
	in.buf = append(in.buf, '\'')
}

// digits writes a quoted random string of n decimal digits.
func (in *inserter) digits(r *rand.Rand, n int) {
	in.comma()
	in.buf = append(in.buf, '\'')
	for range n {
		in.buf = append(in.buf, byte('0'+r.IntN(10)))
	}
	in.buf = append(in.buf, '\'')
}

func (in *inserter) date(t time.Time) {
	in.comma()
	in.buf = append(in.buf, '\'')
	in.buf = t.AppendFormat(in.buf, time.DateOnly)
	in.buf = append(in.buf, '\'')
}

func (in *inserter) datetime(t time.Time) {
	in.comma()
	in.buf = append(in.buf, '\'')
	in.buf = t.AppendFormat(in.buf, time.DateTime)
	in.buf = append(in.buf, '\'')
}

// between returns a uniform integer in [lo, hi].
func between(r *rand.Rand, lo, hi int) int { return lo + r.IntN(hi-lo+1) }

func day(n int) time.Duration { return time.Duration(n) * 24 * time.Hour }

// generator draws the rows of a Scale.
type generator struct {
	s Scale
}

// groups are the independent parts of the data, each from its own random stream, so
// they can be generated and loaded in parallel.
func (g generator) groups() []func(emit func([]byte) error) error {
	return []func(emit func([]byte) error) error{g.catalog, g.customers, g.addresses, g.orders}
}

// catalog writes the countries, authors and items.
func (g generator) catalog(emit func([]byte) error) error {
	r := newRand(g.s.Seed, streamCatalog)
	co := newInserter("country", emit)
	for id := 1; id <= numCountries; id++ {
		co.begin()
		co.int(id)
		co.comma()
		co.buf = append(co.buf, '\'')
		co.buf = appendSyllables(co.buf, uint64(id), 2)
		co.buf = append(co.buf, "IA'"...)
		rate := between(r, 1, 100000000) // the exchange rate in millionths
		co.comma()
		co.buf = fmt.Appendf(co.buf, "%d.%06d", rate/1000000, rate%1000000)
		co.alpha(r, between(r, 4, 18))
		if err := co.end(); err != nil {
			return err
		}
	}
	if err := co.flush(); err != nil {
		return err
	}

	authors := g.s.Authors()
	au := newInserter("author", emit)
	for id := 1; id <= authors; id++ {
		au.begin()
		au.int(id)
		au.alpha(r, between(r, 3, 20))
		au.comma()
		au.buf = append(au.buf, '\'')
		au.buf = appendSyllables(au.buf, uint64(r.IntN(100000)), 3)
		au.buf = append(au.buf, '\'')
		au.alpha(r, between(r, 1, 20))
		au.date(time.Date(1800, 1, 1, 0, 0, 0, 0, time.UTC).Add(day(r.IntN(190 * 365))))
		au.alpha(r, between(r, 125, 500))
		if err := au.end(); err != nil {
			return err
		}
	}
	if err := au.flush(); err != nil {
		return err
	}

	items := g.s.Items
	it := newInserter("item", emit)
	firstPub := time.Date(1930, 1, 1, 0, 0, 0, 0, time.UTC)
	pubDays := int(epoch.Sub(firstPub) / day(1))
	var related [5]int
	for id := 1; id <= items; id++ {
		it.begin()
		it.int(id)
		// Title: 2 to 5 words, each a number spelled in syllables.
		it.comma()
		it.buf = append(it.buf, '\'')
		for w := range between(r, 2, 5) {
			if w > 0 {
				it.buf = append(it.buf, ' ')
			}
			it.buf = appendSyllables(it.buf, uint64(r.IntN(10000)), 2)
		}
		it.buf = append(it.buf, '\'')
		// The first quarter of the items have one author each; the rest a random one.
		if id <= authors {
			it.int(id)
		} else {
			it.int(between(r, 1, authors))
		}
		pub := firstPub.Add(day(r.IntN(pubDays)))
		it.date(pub)
		it.alpha(r, between(r, 14, 60))
		it.str(subjects[r.IntN(len(subjects))])
		it.alpha(r, between(r, 100, 500))
		for k := range related {
		draw:
			for {
				related[k] = between(r, 1, items)
				if related[k] == id {
					continue
				}
				for _, prev := range related[:k] {
					if prev == related[k] {
						continue draw
					}
				}
				break
			}
			it.int(related[k])
		}
		it.comma()
		it.buf = fmt.Appendf(it.buf, "'img%d/thumb_%d.gif'", id%100, id)
		it.comma()
		it.buf = fmt.Appendf(it.buf, "'img%d/image_%d.gif'", id%100, id)
		srp := between(r, 100, 999999)
		it.cents(srp)
		it.cents(srp * between(r, 50, 100) / 100)
		it.date(pub.Add(day(between(r, 1, 30))))
		it.int(between(r, 10, 30))
		it.alpha(r, 13)
		it.int(between(r, 20, 9999))
		it.str(backings[r.IntN(len(backings))])
		it.comma()
		it.buf = fmt.Appendf(it.buf, "'%d.%02dx%d.%02dx%d.%02d'",
			between(r, 1, 99), r.IntN(100), between(r, 1, 99), r.IntN(100), between(r, 1, 99), r.IntN(100))
		if err := it.end(); err != nil {
			return err
		}
	}
	return it.flush()
}

// customers writes the customers; customer c logs in as the syllables of c.
func (g generator) customers(emit func([]byte) error) error {
	r := newRand(g.s.Seed, streamCustomers)
	cu := newInserter("customer", emit)
	addresses := g.s.Addresses()
	for id := 1; id <= g.s.Customers; id++ {
		cu.begin()
		cu.int(id)
		cu.comma()
		cu.buf = append(cu.buf, '\'')
		cu.buf = appendSyllables(cu.buf, uint64(id), 1)
		cu.buf = append(cu.buf, '\'')
		cu.comma()
		cu.buf = append(cu.buf, '\'')
		for _, c := range appendSyllables(nil, uint64(id), 1) {
			cu.buf = append(cu.buf, c|0x20) // the password is the name in lower case
		}
		cu.buf = append(cu.buf, '\'')
		cu.alpha(r, between(r, 8, 15))
		cu.alpha(r, between(r, 8, 15))
		cu.int(between(r, 1, addresses))
		cu.digits(r, between(r, 9, 16))
		cu.comma()
		cu.buf = append(cu.buf, '\'')
		cu.buf = appendSyllables(cu.buf, uint64(id), 1)
		cu.buf = append(cu.buf, "@example.com'"...)
		since := epoch.Add(-day(between(r, 1, 730)))
		cu.date(since)
		last := since.Add(day(r.IntN(61)))
		if last.After(epoch) {
			last = epoch
		}
		cu.date(last)
		cu.datetime(epoch)
		cu.datetime(epoch.Add(2 * time.Hour))
		cu.cents(r.IntN(51))
		cu.cents(0)
		cu.cents(r.IntN(100000))
		cu.date(time.Date(1880, 1, 1, 0, 0, 0, 0, time.UTC).Add(day(r.IntN(120 * 365))))
		cu.alpha(r, between(r, 100, 500))
		if err := cu.end(); err != nil {
			return err
		}
	}
	return cu.flush()
}

// addresses writes two addresses per customer.
func (g generator) addresses(emit func([]byte) error) error {
	r := newRand(g.s.Seed, streamAddresses)
	ad := newInserter("address", emit)
	for id := 1; id <= g.s.Addresses(); id++ {
		ad.begin()
		ad.int(id)
		ad.alpha(r, between(r, 15, 40))
		ad.alpha(r, between(r, 15, 40))
		ad.alpha(r, between(r, 4, 30))
		ad.alpha(r, between(r, 2, 20))
		ad.alpha(r, between(r, 5, 10))
		ad.int(between(r, 1, numCountries))
		if err := ad.end(); err != nil {
			return err
		}
	}
	return ad.flush()
}

// orderSpan is the time over which the loaded orders were placed, oldest first: order
// ids grow with time, so the most recent orders are the highest ids.
const orderSpan = 60 * 24 * time.Hour

// orders writes the orders, their lines and their credit card transactions.
func (g generator) orders(emit func([]byte) error) error {
	r := newRand(g.s.Seed, streamOrders)
	or := newInserter("orders", emit)
	ol := newInserter("order_line", emit)
	cx := newInserter("cc_xacts", emit)
	n := g.s.Orders()
	step := orderSpan / time.Duration(max(n, 1))
	for id := 1; id <= n; id++ {
		date := epoch.Add(-time.Duration(n-id) * step).Truncate(time.Second)
		customer := between(r, 1, g.s.Customers)
		sub := between(r, 1000, 999999)
		tax := sub * 825 / 10000
		total := sub + tax + 300 + 100*between(r, 1, 5)
		or.begin()
		or.int(id)
		or.int(customer)
		or.datetime(date)
		or.cents(sub)
		or.cents(tax)
		or.cents(total)
		or.str(shipTypes[r.IntN(len(shipTypes))])
		or.datetime(date.Add(day(r.IntN(8))))
		or.int(between(r, 1, g.s.Addresses()))
		or.int(between(r, 1, g.s.Addresses()))
		or.str(orderState[r.IntN(len(orderState))])
		if err := or.end(); err != nil {
			return err
		}
		lines := between(r, 1, 5)
		for line := 1; line <= lines; line++ {
			ol.begin()
			ol.int(line)
			ol.int(id)
			ol.int(between(r, 1, g.s.Items))
			ol.int(between(r, 1, 300))
			ol.cents(r.IntN(4))
			ol.alpha(r, between(r, 20, 100))
			if err := ol.end(); err != nil {
				return err
			}
		}
		cx.begin()
		cx.int(id)
		cx.str(cardTypes[r.IntN(len(cardTypes))])
		cx.digits(r, 16)
		cx.alpha(r, between(r, 14, 30))
		cx.date(epoch.Add(day(between(r, 10, 730))))
		cx.alpha(r, 15)
		cx.cents(total)
		cx.datetime(date)
		cx.int(between(r, 1, numCountries))
		if err := cx.end(); err != nil {
			return err
		}
	}
	for _, in := range []*inserter{or, ol, cx} {
		if err := in.flush(); err != nil {
			return err
		}
	}
	return nil
}
