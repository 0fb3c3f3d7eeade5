package bookstore

// stmt names one statement an interaction issues.
type stmt int

const (
	homeCustomer stmt = iota
	homePromo
	newProductsList
	bestSellersLastOrder
	bestSellersList
	productDetailItem
	searchRequestPromo
	searchByAuthor
	searchByTitle
	searchBySubject
	searchResultsPromo
	cartCreate
	cartAdd
	cartSetQty
	cartTouch
	cartList
	cartPromo
	registrationLookup
	registrationAddress
	registrationCustomer
	buyRequestCustomer
	buyRequestLogin
	buyRequestCart
	buyConfirmCart
	buyConfirmItems
	buyConfirmCustomer
	buyConfirmOrder
	buyConfirmLine
	buyConfirmStock
	buyConfirmPayment
	buyConfirmClearCart
	orderInquiryCustomer
	orderDisplayLogin
	orderDisplayLastOrder
	orderDisplayOrder
	orderDisplayLines
	adminRequestItem
	adminConfirmLastOrder
	adminConfirmRelated
	adminConfirmUpdate

	numStmts = iota
)

// promo is the promotional strip several pages show: the related items of an item.
const promo = `SELECT j.i_id, j.i_thumbnail FROM item i JOIN item j
	ON j.i_id IN (i.i_related1, i.i_related2, i.i_related3, i.i_related4, i.i_related5)
	WHERE i.i_id = ?`

// cartContents is the shopping cart as the cart and checkout pages show it.
const cartContents = `SELECT scl_i_id, scl_qty, i_title, i_cost, i_srp, i_backing
	FROM shopping_cart_line JOIN item ON i_id = scl_i_id WHERE scl_sc_id = ?`

// customerWithAddress is a customer with the address and country the pages show.
const customerWithAddress = `SELECT c_id, c_uname, c_passwd, c_fname, c_lname, c_discount, c_email,
	addr_street1, addr_street2, addr_city, addr_state, addr_zip, co_name
	FROM customer JOIN address ON addr_id = c_addr_id JOIN country ON co_id = addr_co_id`

// searchColumns is what a list of books shows.
const searchColumns = `SELECT i_id, i_title, a_fname, a_lname FROM item JOIN author ON a_id = i_a_id`

// statements are the SQL of each statement, without its tag, and the interaction that
// issues it. They follow the queries of the TPC-W specification (clause 2), written for
// MariaDB.
var statements = [numStmts]struct {
	in  Interaction
	sql string
}{
	homeCustomer: {Home, `SELECT c_fname, c_lname FROM customer WHERE c_id = ?`},
	homePromo:    {Home, promo},

	newProductsList: {NewProducts, searchColumns +
		` WHERE i_subject = ? ORDER BY i_pub_date DESC, i_title LIMIT 50`},

	// The best sellers of a subject: the 50 items sold in the largest quantities in the
	// most recent orders.
	bestSellersLastOrder: {BestSellers, `SELECT MAX(o_id) FROM orders`},
	bestSellersList: {BestSellers, `SELECT i_id, i_title, a_fname, a_lname, SUM(ol_qty) AS sold
		FROM order_line JOIN item ON i_id = ol_i_id JOIN author ON a_id = i_a_id
		WHERE ol_o_id > ? AND i_subject = ?
		GROUP BY i_id, i_title, a_fname, a_lname ORDER BY sold DESC, i_id LIMIT 50`},

	productDetailItem: {ProductDetail, `SELECT i_title, a_fname, a_lname, i_pub_date, i_publisher,
		i_subject, i_desc, i_thumbnail, i_image, i_cost, i_srp, i_avail, i_isbn, i_page,
		i_backing, i_dimensions FROM item JOIN author ON a_id = i_a_id WHERE i_id = ?`},

	searchRequestPromo: {SearchRequest, promo},

	searchByAuthor:     {SearchResults, searchColumns + ` WHERE a_lname LIKE ? ORDER BY i_title LIMIT 50`},
	searchByTitle:      {SearchResults, searchColumns + ` WHERE i_title LIKE ? ORDER BY i_title LIMIT 50`},
	searchBySubject:    {SearchResults, searchColumns + ` WHERE i_subject = ? ORDER BY i_title LIMIT 50`},
	searchResultsPromo: {SearchResults, promo},

	cartCreate: {ShoppingCart, `INSERT INTO shopping_cart (sc_time) VALUES (NOW())`},
	cartAdd: {ShoppingCart, `INSERT INTO shopping_cart_line (scl_sc_id, scl_i_id, scl_qty) VALUES (?, ?, 1)
		ON DUPLICATE KEY UPDATE scl_qty = scl_qty + 1`},
	cartSetQty: {ShoppingCart, `UPDATE shopping_cart_line SET scl_qty = ? WHERE scl_sc_id = ? AND scl_i_id = ?`},
	cartTouch:  {ShoppingCart, `UPDATE shopping_cart SET sc_time = NOW() WHERE sc_id = ?`},
	cartList:   {ShoppingCart, cartContents},
	cartPromo:  {ShoppingCart, promo},

	registrationLookup:  {CustomerRegistration, customerWithAddress + ` WHERE c_uname = ?`},
	registrationAddress: {CustomerRegistration, `INSERT INTO address (addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id) VALUES (?, ?, ?, ?, ?, ?)`},
	registrationCustomer: {CustomerRegistration, `INSERT INTO customer (c_uname, c_passwd, c_fname, c_lname,
		c_addr_id, c_phone, c_email, c_since, c_last_login, c_login, c_expiration, c_discount, c_balance,
		c_ytd_pmt, c_birthdate, c_data) VALUES (?, ?, ?, ?, ?, ?, ?, CURDATE(), CURDATE(), NOW(),
		NOW() + INTERVAL 2 HOUR, ?, 0, ?, CURDATE() - INTERVAL ? DAY, ?)`},

	buyRequestCustomer: {BuyRequest, customerWithAddress + ` WHERE c_id = ?`},
	buyRequestLogin:    {BuyRequest, `UPDATE customer SET c_login = NOW(), c_expiration = NOW() + INTERVAL 2 HOUR WHERE c_id = ?`},
	buyRequestCart:     {BuyRequest, cartContents},

	buyConfirmCart: {BuyConfirm, `SELECT scl_i_id, scl_qty, i_cost FROM shopping_cart_line
		JOIN item ON i_id = scl_i_id WHERE scl_sc_id = ? ORDER BY scl_i_id`},
	buyConfirmItems:    {BuyConfirm, `SELECT i_id, i_cost FROM item WHERE i_id IN (?, ?, ?) ORDER BY i_id`},
	buyConfirmCustomer: {BuyConfirm, `SELECT c_discount, c_addr_id FROM customer WHERE c_id = ?`},
	buyConfirmOrder: {BuyConfirm, `INSERT INTO orders (o_c_id, o_date, o_sub_total, o_tax, o_total,
		o_ship_type, o_ship_date, o_bill_addr_id, o_ship_addr_id, o_status)
		VALUES (?, NOW(), ?, ?, ?, ?, NOW() + INTERVAL ? DAY, ?, ?, 'PENDING')`},
	buyConfirmLine: {BuyConfirm, `INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments)
		VALUES (?, ?, ?, ?, ?, ?)`},
	// TPC-W restocks an item that falls below 10 copies with 21 more.
	buyConfirmStock: {BuyConfirm, `UPDATE item SET i_stock = i_stock - ? + IF(i_stock - ? < 10, 21, 0) WHERE i_id = ?`},
	buyConfirmPayment: {BuyConfirm, `INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire,
		cx_auth_id, cx_xact_amt, cx_xact_date, cx_co_id) VALUES (?, ?, ?, ?, CURDATE() + INTERVAL 1 YEAR, ?, ?, NOW(), ?)`},
	buyConfirmClearCart: {BuyConfirm, `DELETE FROM shopping_cart_line WHERE scl_sc_id = ?`},

	orderInquiryCustomer: {OrderInquiry, `SELECT c_uname FROM customer WHERE c_id = ?`},

	orderDisplayLogin:     {OrderDisplay, `SELECT c_id, c_passwd FROM customer WHERE c_uname = ?`},
	orderDisplayLastOrder: {OrderDisplay, `SELECT MAX(o_id) FROM orders WHERE o_c_id = ?`},
	orderDisplayOrder: {OrderDisplay, `SELECT o_id, o_date, o_sub_total, o_tax, o_total, o_ship_type,
		o_ship_date, o_status, c_fname, c_lname, c_phone, c_email, cx_type, cx_auth_id,
		b.addr_street1, b.addr_street2, b.addr_city, b.addr_state, b.addr_zip, bc.co_name,
		s.addr_street1, s.addr_street2, s.addr_city, s.addr_state, s.addr_zip, sc.co_name
		FROM orders JOIN customer ON c_id = o_c_id JOIN cc_xacts ON cx_o_id = o_id
		JOIN address b ON b.addr_id = o_bill_addr_id JOIN country bc ON bc.co_id = b.addr_co_id
		JOIN address s ON s.addr_id = o_ship_addr_id JOIN country sc ON sc.co_id = s.addr_co_id
		WHERE o_id = ?`},
	orderDisplayLines: {OrderDisplay, `SELECT ol_i_id, i_title, i_publisher, i_cost, ol_qty, ol_discount, ol_comments
		FROM order_line JOIN item ON i_id = ol_i_id WHERE ol_o_id = ?`},

	adminRequestItem: {AdminRequest, `SELECT i_id, i_title, i_cost, i_srp, i_image, i_thumbnail, i_pub_date,
		a_fname, a_lname FROM item JOIN author ON a_id = i_a_id WHERE i_id = ?`},

	// The related items of an item: of the customers who bought it in the most recent
	// orders, the five other items they bought in the largest quantities. The buyers come
	// first (STRAIGHT_JOIN): found by reading the window, then their orders by customer.
	// Left to itself, the optimizer sometimes reads every order instead and looks each
	// one up among the buyers, which costs several times as much, so that the cost would
	// flip between two levels as the statistics change.
	adminConfirmLastOrder: {AdminConfirm, `SELECT MAX(o_id) FROM orders`},
	adminConfirmRelated: {AdminConfirm, `SELECT STRAIGHT_JOIN ol.ol_i_id, SUM(ol.ol_qty) AS bought
		FROM (SELECT DISTINCT r.o_c_id FROM orders r JOIN order_line rl ON rl.ol_o_id = r.o_id
			WHERE r.o_id > ? AND rl.ol_i_id = ?) AS buyers
		JOIN orders o ON o.o_c_id = buyers.o_c_id
		JOIN order_line ol ON ol.ol_o_id = o.o_id
		WHERE ol.ol_i_id <> ?
		GROUP BY ol.ol_i_id ORDER BY bought DESC, ol.ol_i_id LIMIT 5`},
	adminConfirmUpdate: {AdminConfirm, `UPDATE item SET i_cost = ?, i_image = ?, i_thumbnail = ?,
		i_pub_date = CURDATE(), i_related1 = COALESCE(?, i_related1), i_related2 = COALESCE(?, i_related2),
		i_related3 = COALESCE(?, i_related3), i_related4 = COALESCE(?, i_related4),
		i_related5 = COALESCE(?, i_related5) WHERE i_id = ?`},
}

// tag is the comment every statement of an interaction starts with.
func tag(in Interaction) string { return "/* gk:type=" + in.String() + " */ " }

// texts are the statements as sent: the tag, then the SQL.
var texts = func() (t [numStmts]string) {
	for i, s := range statements {
		t[i] = tag(s.in) + s.sql
	}
	return t
}()

// Transaction control, tagged like the interaction's other statements.
var (
	txBegin    = txStatements("BEGIN")
	txCommit   = txStatements("COMMIT")
	txRollback = txStatements("ROLLBACK")
)

func txStatements(verb string) (t [numInteractions]string) {
	for i := range t {
		t[i] = tag(Interaction(i)) + verb
	}
	return t
}
