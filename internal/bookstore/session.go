package bookstore

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/go-sql-driver/mysql"
)

// store is what the interactions need to know about the loaded data, read from the
// database when a run starts.
type store struct {
	items, customers int
	// bestSellersWindow and relatedWindow are the numbers of recent orders Best Sellers
	// and Admin Confirm look at.
	bestSellersWindow, relatedWindow int
	// runID makes the user names of customers registered by this run unique.
	runID string
}

// readStore reads the size of the loaded data.
func readStore(ctx context.Context, db *sql.DB, bestSellersWindow, relatedWindow int) (*store, error) {
	var items, customers sql.NullInt64
	err := db.QueryRowContext(ctx, "SELECT (SELECT MAX(i_id) FROM item), (SELECT MAX(c_id) FROM customer)").Scan(&items, &customers)
	if err != nil {
		return nil, fmt.Errorf("reading the size of the bookstore: %w (load it first: bookstore load --dsn DSN)", err)
	}
	if items.Int64 < 10 || customers.Int64 < 10 {
		return nil, fmt.Errorf("the bookstore has %d items and %d customers; load it first (bookstore load --dsn DSN)", items.Int64, customers.Int64)
	}
	return &store{
		items:             int(items.Int64),
		customers:         int(customers.Int64),
		bestSellersWindow: bestSellersWindow,
		relatedWindow:     relatedWindow,
		runID:             strconv.FormatInt(time.Now().UnixNano(), 36),
	}, nil
}

// maxCartLines bounds the lines of a session's cart; past it, Shopping Cart changes the
// quantity of a line instead of adding one.
const maxCartLines = 5

// cartLine is a line of a cart being bought.
type cartLine struct {
	item, qty int
	cost      float64
}

// session is an emulated customer: a connection, who it is logged in as, its cart, and
// the item it looked at last. It is used by one goroutine.
type session struct {
	st   *store
	r    *rand.Rand
	conn *sql.Conn
	// id numbers the session within the run, for the user names it registers.
	id, registered int

	customer int
	uname    string
	cart     int64
	// cartItems are the items in the cart, as far as the session knows.
	cartItems []int
	// lastItem is the item of the last product page, which the cart and the admin pages
	// act on; 0 for a random one.
	lastItem int
	lines    []cartLine
	// broken is set when the connection can no longer be trusted (a network error, a
	// timeout, a failed rollback); the runner then discards it.
	broken bool
}

func newSession(st *store, r *rand.Rand, id int) *session {
	s := &session{st: st, r: r, id: id}
	s.login(between(r, 1, st.customers))
	return s
}

// login makes the session act for loaded customer c, whose user name is c in syllables.
func (s *session) login(c int) {
	s.customer = c
	s.uname = string(appendSyllables(nil, uint64(c), 1))
}

// reset starts a new visit as a random customer with no cart.
func (s *session) reset() {
	s.login(between(s.r, 1, s.st.customers))
	s.cart, s.cartItems, s.lastItem = 0, s.cartItems[:0], 0
}

func (s *session) item() int { return between(s.r, 1, s.st.items) }

func (s *session) subject() string { return subjects[s.r.IntN(len(subjects))] }

// takeItem returns the item of the last product page, or a random one.
func (s *session) takeItem() int {
	if s.lastItem != 0 {
		return s.lastItem
	}
	return s.item()
}

func (s *session) query(ctx context.Context, id stmt, args ...any) error {
	return drain(s.conn.QueryContext(ctx, texts[id], args...))
}

func (s *session) exec(ctx context.Context, id stmt, args ...any) (sql.Result, error) {
	return s.conn.ExecContext(ctx, texts[id], args...)
}

func (s *session) row(ctx context.Context, id stmt, args ...any) *sql.Row {
	return s.conn.QueryRowContext(ctx, texts[id], args...)
}

// do runs one interaction on the session's connection.
func (s *session) do(ctx context.Context, in Interaction) error {
	switch in {
	case Home:
		return s.home(ctx)
	case NewProducts:
		return s.query(ctx, newProductsList, s.subject())
	case BestSellers:
		return s.bestSellers(ctx)
	case ProductDetail:
		s.lastItem = s.item()
		return s.query(ctx, productDetailItem, s.lastItem)
	case SearchRequest:
		return s.query(ctx, searchRequestPromo, s.item())
	case SearchResults:
		return s.searchResults(ctx)
	case ShoppingCart:
		return s.shoppingCart(ctx)
	case CustomerRegistration:
		return s.customerRegistration(ctx)
	case BuyRequest:
		return s.buyRequest(ctx)
	case BuyConfirm:
		return s.buyConfirm(ctx)
	case OrderInquiry:
		return s.query(ctx, orderInquiryCustomer, s.customer)
	case OrderDisplay:
		return s.orderDisplay(ctx)
	case AdminRequest:
		return s.query(ctx, adminRequestItem, s.takeItem())
	case AdminConfirm:
		return s.adminConfirm(ctx)
	}
	return fmt.Errorf("unknown interaction %d", in)
}

// tx runs body inside a transaction tagged with in, and rolls it back if body fails.
func (s *session) tx(ctx context.Context, in Interaction, body func() error) error {
	if _, err := s.conn.ExecContext(ctx, txBegin[in]); err != nil {
		return err
	}
	if err := body(); err != nil {
		s.rollback(ctx, in, err)
		return err
	}
	_, err := s.conn.ExecContext(ctx, txCommit[in])
	return err
}

// rollback ends a failed transaction. After an error the server did not send, the
// connection is in an unknown state: it is discarded, and the server rolls back when it
// closes.
func (s *session) rollback(ctx context.Context, in Interaction, cause error) {
	if !serverError(cause) || ctx.Err() != nil {
		s.broken = true
		return
	}
	if _, err := s.conn.ExecContext(ctx, txRollback[in]); err != nil {
		s.broken = true
	}
}

// serverError reports whether err is an error packet from the server (or the proxy),
// after which the connection remains usable.
func serverError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me)
}

// discard closes the session's connection without returning it to the pool.
func (s *session) discard() {
	if s.conn == nil {
		return
	}
	_ = s.conn.Raw(func(any) error { return driver.ErrBadConn })
	_ = s.conn.Close()
	s.conn = nil
	s.broken = false
}

// release returns the session's connection to the pool.
func (s *session) release() {
	if s.conn != nil {
		_ = s.conn.Close()
		s.conn = nil
	}
}

func (s *session) home(ctx context.Context) error {
	if err := s.query(ctx, homeCustomer, s.customer); err != nil {
		return err
	}
	return s.query(ctx, homePromo, s.item())
}

func (s *session) bestSellers(ctx context.Context) error {
	var last sql.NullInt64
	if err := s.row(ctx, bestSellersLastOrder).Scan(&last); err != nil {
		return err
	}
	return s.query(ctx, bestSellersList, last.Int64-int64(s.st.bestSellersWindow), s.subject())
}

// Search strings: two syllables, the prefix of an author's last name or a piece of a
// title word (see appendSyllables).
var authorPatterns, titlePatterns = func() (authors, titles [100]string) {
	for n := range 100 {
		syl := string(appendSyllables(nil, uint64(n), 2))
		authors[n] = syl + "%"
		titles[n] = "%" + syl + "%"
	}
	return authors, titles
}()

func (s *session) searchResults(ctx context.Context) error {
	var err error
	switch s.r.IntN(3) {
	case 0:
		err = s.query(ctx, searchByAuthor, authorPatterns[s.r.IntN(100)])
	case 1:
		err = s.query(ctx, searchByTitle, titlePatterns[s.r.IntN(100)])
	default:
		err = s.query(ctx, searchBySubject, s.subject())
	}
	if err != nil {
		return err
	}
	return s.query(ctx, searchResultsPromo, s.item())
}

func (s *session) shoppingCart(ctx context.Context) error {
	item := s.takeItem()
	s.lastItem = 0
	cart, created, added := s.cart, false, false
	err := s.tx(ctx, ShoppingCart, func() error {
		if cart == 0 {
			res, err := s.exec(ctx, cartCreate)
			if err != nil {
				return err
			}
			if cart, err = res.LastInsertId(); err != nil {
				return err
			}
			created = true
		}
		if len(s.cartItems) < maxCartLines && (created || s.r.IntN(2) == 0) {
			if _, err := s.exec(ctx, cartAdd, cart, item); err != nil {
				return err
			}
			added = true
		} else if len(s.cartItems) > 0 {
			if _, err := s.exec(ctx, cartSetQty, between(s.r, 1, 5), cart, s.cartItems[s.r.IntN(len(s.cartItems))]); err != nil {
				return err
			}
		}
		if _, err := s.exec(ctx, cartTouch, cart); err != nil {
			return err
		}
		return s.query(ctx, cartList, cart)
	})
	if err != nil {
		return err
	}
	if created {
		s.cart, s.cartItems = cart, s.cartItems[:0]
	}
	if added && !contains(s.cartItems, item) {
		s.cartItems = append(s.cartItems, item)
	}
	return s.query(ctx, cartPromo, item)
}

func contains(items []int, item int) bool {
	for _, i := range items {
		if i == item {
			return true
		}
	}
	return false
}

// returningShare is the share of registrations by a returning customer; the others
// register as new customers.
const returningShare = 0.8

func (s *session) customerRegistration(ctx context.Context) error {
	if s.r.Float64() < returningShare {
		c := between(s.r, 1, s.st.customers)
		uname := string(appendSyllables(nil, uint64(c), 1))
		if err := s.query(ctx, registrationLookup, uname); err != nil {
			return err
		}
		s.login(c)
		return nil
	}
	s.registered++
	uname := "n_" + s.st.runID + "_" + strconv.Itoa(s.id) + "_" + strconv.Itoa(s.registered)
	var customer int64
	err := s.tx(ctx, CustomerRegistration, func() error {
		res, err := s.exec(ctx, registrationAddress, s.alpha(15, 40), s.alpha(15, 40), s.alpha(4, 30),
			s.alpha(2, 20), s.alpha(5, 10), between(s.r, 1, numCountries))
		if err != nil {
			return err
		}
		addr, err := res.LastInsertId()
		if err != nil {
			return err
		}
		res, err = s.exec(ctx, registrationCustomer, uname, uname, s.alpha(8, 15), s.alpha(8, 15), addr,
			s.alpha(9, 16), uname+"@example.com", float64(s.r.IntN(51))/100, float64(s.r.IntN(100000))/100, between(s.r, 18*365, 100*365), s.alpha(100, 500))
		if err != nil {
			return err
		}
		customer, err = res.LastInsertId()
		return err
	})
	if err != nil {
		return err
	}
	s.customer, s.uname = int(customer), uname
	return nil
}

// alpha is a random string of letters, between lo and hi long.
func (s *session) alpha(lo, hi int) string {
	const letters = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
	b := make([]byte, between(s.r, lo, hi))
	for i := range b {
		b[i] = letters[s.r.IntN(len(letters))]
	}
	return string(b)
}

func (s *session) buyRequest(ctx context.Context) error {
	return s.tx(ctx, BuyRequest, func() error {
		if err := s.query(ctx, buyRequestCustomer, s.customer); err != nil {
			return err
		}
		if _, err := s.exec(ctx, buyRequestLogin, s.customer); err != nil {
			return err
		}
		if s.cart == 0 {
			return nil
		}
		return s.query(ctx, buyRequestCart, s.cart)
	})
}

func (s *session) buyConfirm(ctx context.Context) error {
	err := s.tx(ctx, BuyConfirm, func() error {
		if err := s.readCart(ctx); err != nil {
			return err
		}
		var discount float64
		var addr int64
		if err := s.row(ctx, buyConfirmCustomer, s.customer).Scan(&discount, &addr); err != nil {
			return err
		}
		var sub float64
		for _, l := range s.lines {
			sub += l.cost * float64(l.qty) * (1 - discount)
		}
		sub = roundCents(sub)
		tax := roundCents(sub * 0.0825)
		total := roundCents(sub + tax + 3 + float64(len(s.lines)))
		res, err := s.exec(ctx, buyConfirmOrder, s.customer, sub, tax, total,
			shipTypes[s.r.IntN(len(shipTypes))], between(s.r, 1, 7), addr, addr)
		if err != nil {
			return err
		}
		order, err := res.LastInsertId()
		if err != nil {
			return err
		}
		for n, l := range s.lines {
			if _, err := s.exec(ctx, buyConfirmLine, n+1, order, l.item, l.qty, discount, s.alpha(20, 100)); err != nil {
				return err
			}
			if _, err := s.exec(ctx, buyConfirmStock, l.qty, l.qty, l.item); err != nil {
				return err
			}
		}
		if _, err := s.exec(ctx, buyConfirmPayment, order, cardTypes[s.r.IntN(len(cardTypes))],
			s.digits(16), s.alpha(14, 30), s.alpha(15, 15), total, between(s.r, 1, numCountries)); err != nil {
			return err
		}
		if s.cart == 0 {
			return nil
		}
		_, err = s.exec(ctx, buyConfirmClearCart, s.cart)
		return err
	})
	if err == nil {
		s.cartItems = s.cartItems[:0]
	}
	return err
}

// readCart reads the lines to buy into s.lines, in item order (so that concurrent
// purchases lock the items' rows in the same order): the cart's, or one to three random
// items when the cart is empty.
func (s *session) readCart(ctx context.Context) error {
	s.lines = s.lines[:0]
	if s.cart != 0 {
		if err := s.scanLines(ctx, buyConfirmCart, s.cart); err != nil {
			return err
		}
	}
	if len(s.lines) > 0 {
		return nil
	}
	a, b, c := s.item(), s.item(), s.item()
	switch s.r.IntN(3) {
	case 0:
		b, c = a, a
	case 1:
		c = a
	}
	return s.scanLines(ctx, buyConfirmItems, a, b, c)
}

// scanLines reads (item, quantity, cost) or (item, cost) rows into s.lines.
func (s *session) scanLines(ctx context.Context, id stmt, args ...any) error {
	rows, err := s.conn.QueryContext(ctx, texts[id], args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	withQty := id == buyConfirmCart
	for rows.Next() {
		var l cartLine
		if withQty {
			err = rows.Scan(&l.item, &l.qty, &l.cost)
		} else {
			l.qty = between(s.r, 1, 3)
			err = rows.Scan(&l.item, &l.cost)
		}
		if err != nil {
			return err
		}
		s.lines = append(s.lines, l)
	}
	return rows.Err()
}

func roundCents(x float64) float64 { return math.Round(x*100) / 100 }

// digits is a random string of n decimal digits.
func (s *session) digits(n int) string {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte('0' + s.r.IntN(10))
	}
	return string(b)
}

func (s *session) orderDisplay(ctx context.Context) error {
	var customer int64
	var passwd string
	err := s.row(ctx, orderDisplayLogin, s.uname).Scan(&customer, &passwd)
	if errors.Is(err, sql.ErrNoRows) {
		return nil // unknown user: the page says so
	}
	if err != nil {
		return err
	}
	var last sql.NullInt64
	if err := s.row(ctx, orderDisplayLastOrder, customer).Scan(&last); err != nil {
		return err
	}
	if !last.Valid {
		return nil // no order yet: the page says so
	}
	if err := s.query(ctx, orderDisplayOrder, last.Int64); err != nil {
		return err
	}
	return s.query(ctx, orderDisplayLines, last.Int64)
}

// firstError returns the first error that is not nil.
func firstError(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (s *session) adminConfirm(ctx context.Context) error {
	item := s.takeItem()
	s.lastItem = 0
	return s.tx(ctx, AdminConfirm, func() error {
		var last sql.NullInt64
		if err := s.row(ctx, adminConfirmLastOrder).Scan(&last); err != nil {
			return err
		}
		rows, err := s.conn.QueryContext(ctx, texts[adminConfirmRelated], last.Int64-int64(s.st.relatedWindow), item, item)
		if err != nil {
			return err
		}
		var related [5]any // nil keeps the current related item
		n := 0
		for rows.Next() && n < len(related) {
			var id, bought int64
			if err := rows.Scan(&id, &bought); err != nil {
				rows.Close()
				return err
			}
			related[n] = id
			n++
		}
		if err := firstError(rows.Err(), rows.Close()); err != nil {
			return err
		}
		cost := float64(between(s.r, 100, 999999)) / 100
		image := "img" + strconv.Itoa(item%100) + "/image_" + strconv.Itoa(item) + ".gif"
		thumb := "img" + strconv.Itoa(item%100) + "/thumb_" + strconv.Itoa(item) + ".gif"
		_, err = s.exec(ctx, adminConfirmUpdate, cost, image, thumb,
			related[0], related[1], related[2], related[3], related[4], item)
		return err
	})
}
