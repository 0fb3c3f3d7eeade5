package bookstore

// tables lists the bookstore's tables in the order they are created.
var tables = []string{
	"country", "author", "item", "customer", "address",
	"orders", "order_line", "cc_xacts", "shopping_cart", "shopping_cart_line",
}

// createTables creates each table with its primary key only; the secondary indexes are
// added after the data (see secondaryIndexes), which InnoDB builds faster by sorting.
// The columns are TPC-W's (clause 1.3 of the specification).
var createTables = []string{
	`CREATE TABLE country (
		co_id INT NOT NULL,
		co_name VARCHAR(50) NOT NULL,
		co_exchange DECIMAL(12,6) NOT NULL,
		co_currency VARCHAR(18) NOT NULL,
		PRIMARY KEY (co_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE author (
		a_id INT NOT NULL AUTO_INCREMENT,
		a_fname VARCHAR(20) NOT NULL,
		a_lname VARCHAR(20) NOT NULL,
		a_mname VARCHAR(20) NOT NULL,
		a_dob DATE NOT NULL,
		a_bio VARCHAR(500) NOT NULL,
		PRIMARY KEY (a_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE item (
		i_id INT NOT NULL AUTO_INCREMENT,
		i_title VARCHAR(60) NOT NULL,
		i_a_id INT NOT NULL,
		i_pub_date DATE NOT NULL,
		i_publisher VARCHAR(60) NOT NULL,
		i_subject VARCHAR(60) NOT NULL,
		i_desc VARCHAR(500) NOT NULL,
		i_related1 INT NOT NULL,
		i_related2 INT NOT NULL,
		i_related3 INT NOT NULL,
		i_related4 INT NOT NULL,
		i_related5 INT NOT NULL,
		i_thumbnail VARCHAR(40) NOT NULL,
		i_image VARCHAR(40) NOT NULL,
		i_srp DECIMAL(15,2) NOT NULL,
		i_cost DECIMAL(15,2) NOT NULL,
		i_avail DATE NOT NULL,
		i_stock INT NOT NULL,
		i_isbn CHAR(13) NOT NULL,
		i_page INT NOT NULL,
		i_backing VARCHAR(15) NOT NULL,
		i_dimensions VARCHAR(25) NOT NULL,
		PRIMARY KEY (i_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE customer (
		c_id INT NOT NULL AUTO_INCREMENT,
		c_uname VARCHAR(30) NOT NULL,
		c_passwd VARCHAR(30) NOT NULL,
		c_fname VARCHAR(17) NOT NULL,
		c_lname VARCHAR(17) NOT NULL,
		c_addr_id INT NOT NULL,
		c_phone VARCHAR(18) NOT NULL,
		c_email VARCHAR(50) NOT NULL,
		c_since DATE NOT NULL,
		c_last_login DATE NOT NULL,
		c_login DATETIME NOT NULL,
		c_expiration DATETIME NOT NULL,
		c_discount DECIMAL(5,2) NOT NULL,
		c_balance DECIMAL(15,2) NOT NULL,
		c_ytd_pmt DECIMAL(15,2) NOT NULL,
		c_birthdate DATE NOT NULL,
		c_data VARCHAR(500) NOT NULL,
		PRIMARY KEY (c_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE address (
		addr_id INT NOT NULL AUTO_INCREMENT,
		addr_street1 VARCHAR(40) NOT NULL,
		addr_street2 VARCHAR(40) NOT NULL,
		addr_city VARCHAR(30) NOT NULL,
		addr_state VARCHAR(20) NOT NULL,
		addr_zip VARCHAR(10) NOT NULL,
		addr_co_id INT NOT NULL,
		PRIMARY KEY (addr_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE orders (
		o_id INT NOT NULL AUTO_INCREMENT,
		o_c_id INT NOT NULL,
		o_date DATETIME NOT NULL,
		o_sub_total DECIMAL(15,2) NOT NULL,
		o_tax DECIMAL(15,2) NOT NULL,
		o_total DECIMAL(15,2) NOT NULL,
		o_ship_type VARCHAR(10) NOT NULL,
		o_ship_date DATETIME NOT NULL,
		o_bill_addr_id INT NOT NULL,
		o_ship_addr_id INT NOT NULL,
		o_status VARCHAR(16) NOT NULL,
		PRIMARY KEY (o_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE order_line (
		ol_id INT NOT NULL,
		ol_o_id INT NOT NULL,
		ol_i_id INT NOT NULL,
		ol_qty INT NOT NULL,
		ol_discount DECIMAL(5,2) NOT NULL,
		ol_comments VARCHAR(110) NOT NULL,
		PRIMARY KEY (ol_o_id, ol_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE cc_xacts (
		cx_o_id INT NOT NULL,
		cx_type VARCHAR(10) NOT NULL,
		cx_num VARCHAR(20) NOT NULL,
		cx_name VARCHAR(31) NOT NULL,
		cx_expire DATE NOT NULL,
		cx_auth_id CHAR(15) NOT NULL,
		cx_xact_amt DECIMAL(15,2) NOT NULL,
		cx_xact_date DATETIME NOT NULL,
		cx_co_id INT NOT NULL,
		PRIMARY KEY (cx_o_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE shopping_cart (
		sc_id INT NOT NULL AUTO_INCREMENT,
		sc_time DATETIME NOT NULL,
		PRIMARY KEY (sc_id)
	) ENGINE=InnoDB`,
	`CREATE TABLE shopping_cart_line (
		scl_sc_id INT NOT NULL,
		scl_qty INT NOT NULL,
		scl_i_id INT NOT NULL,
		PRIMARY KEY (scl_sc_id, scl_i_id)
	) ENGINE=InnoDB`,
}

// secondaryIndexes are the indexes TPC-W implementations add: the lookups by subject,
// title and author of the browsing pages, the unique user name a customer logs in with,
// a customer's orders, and addresses by country. Order lines are found by their order
// only (the primary key): no interaction looks up the lines of one item except the two
// that rank items over a window of recent orders, Best Sellers and Admin Confirm, and
// those read the window, as the specification describes them. That read is what makes
// them the two heavy interactions, as in TPC-W.
var secondaryIndexes = []string{
	"ALTER TABLE item ADD INDEX item_subject (i_subject), ADD INDEX item_title (i_title), ADD INDEX item_author (i_a_id)",
	"ALTER TABLE author ADD INDEX author_lname (a_lname)",
	"ALTER TABLE customer ADD UNIQUE INDEX customer_uname (c_uname)",
	"ALTER TABLE orders ADD INDEX orders_customer (o_c_id)",
	"ALTER TABLE address ADD INDEX address_country (addr_co_id)",
}
