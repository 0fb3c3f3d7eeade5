# Statement shapes the classifier must get right, one per line as "kind: statement", with
# "volatile" after the kind where its result may differ between runs over the same data
# (Result.Volatile) and "uses=a,b" last where it uses connection state (Result.Uses):
# "read volatile uses=connection_id: SELECT CONNECTION_ID()". corpus_test.go checks the kind,
# volatility and uses of each and, wherever the TiDB parser parses the statement, compares
# the tables read and written with what the parser's syntax tree says.

# sysbench (oltp_*.lua, the prepared and the text forms)
read: SELECT c FROM sbtest1 WHERE id=?
read: SELECT c FROM sbtest7 WHERE id BETWEEN ? AND ?
read: SELECT SUM(k) FROM sbtest2 WHERE id BETWEEN ? AND ?
read: SELECT c FROM sbtest3 WHERE id BETWEEN ? AND ? ORDER BY c
read: SELECT DISTINCT c FROM sbtest4 WHERE id BETWEEN ? AND ? ORDER BY c
read: SELECT id, k, c, pad FROM sbtest1 WHERE k IN (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
read: SELECT count(k) FROM sbtest1 WHERE k BETWEEN 100 AND 200
write: UPDATE sbtest2 SET k=k+1 WHERE id=?
write: UPDATE sbtest3 SET c=? WHERE id=?
write: DELETE FROM sbtest4 WHERE id=?
write: INSERT INTO sbtest1 (id, k, c, pad) VALUES (?, ?, ?, ?)
write: INSERT INTO sbtest1(k, c, pad) VALUES(5000, '123-456', '789')
transaction: BEGIN
transaction: COMMIT
ddl: CREATE TABLE sbtest1(id INTEGER NOT NULL AUTO_INCREMENT, k INTEGER DEFAULT '0' NOT NULL, c CHAR(120) DEFAULT '' NOT NULL, pad CHAR(60) DEFAULT '' NOT NULL, PRIMARY KEY (id)) ENGINE = innodb
ddl: CREATE INDEX k_1 ON sbtest1(k)
ddl: DROP TABLE IF EXISTS sbtest1

# TPC-C (the five transactions of tpcc-mysql)
read: SELECT c_discount, c_last, c_credit, w_tax FROM customer, warehouse WHERE w_id = ? AND c_w_id = w_id AND c_d_id = ? AND c_id = ?
locking_read volatile: SELECT d_next_o_id, d_tax FROM district WHERE d_id = ? AND d_w_id = ? FOR UPDATE
write: UPDATE district SET d_next_o_id = ? + 1 WHERE d_id = ? AND d_w_id = ?
write: INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) VALUES(?, ?, ?, ?, ?, ?, ?)
write: INSERT INTO new_orders (no_o_id, no_d_id, no_w_id) VALUES (?,?,?)
read: SELECT i_price, i_name, i_data FROM item WHERE i_id = ?
locking_read volatile: SELECT s_quantity, s_data, s_dist_01, s_dist_02, s_dist_03, s_dist_04, s_dist_05, s_dist_06, s_dist_07, s_dist_08, s_dist_09, s_dist_10 FROM stock WHERE s_i_id = ? AND s_w_id = ? FOR UPDATE
write: UPDATE stock SET s_quantity = ? WHERE s_i_id = ? AND s_w_id = ?
write: INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_dist_info) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
write: UPDATE warehouse SET w_ytd = w_ytd + ? WHERE w_id = ?
read: SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = ?
read: SELECT count(c_id) FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_last = ?
read: SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, c_phone, c_credit, c_credit_lim, c_discount, c_balance, c_since FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?
locking_read volatile: SELECT c_data FROM customer WHERE c_w_id = ? AND c_d_id = ? AND c_id = ? FOR UPDATE
write: UPDATE customer SET c_balance = ?, c_data = ? WHERE c_w_id = ? AND c_d_id = ? AND c_id = ?
write: INSERT INTO history(h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) VALUES(?, ?, ?, ?, ?, ?, ?, ?)
read: SELECT o_id, o_entry_d, COALESCE(o_carrier_id,0) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ? AND o_id = (SELECT MAX(o_id) FROM orders WHERE o_w_id = ? AND o_d_id = ? AND o_c_id = ?)
read: SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id = ?
locking_read volatile: SELECT COALESCE(MIN(no_o_id),0) FROM new_orders WHERE no_d_id = ? AND no_w_id = ? FOR UPDATE SKIP LOCKED
write: DELETE FROM new_orders WHERE no_o_id = ? AND no_d_id = ? AND no_w_id = ?
write: UPDATE orders SET o_carrier_id = ? WHERE o_id = ? AND o_d_id = ? AND o_w_id = ?
write: UPDATE order_line SET ol_delivery_d = ? WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?
read: SELECT SUM(ol_amount) FROM order_line WHERE ol_o_id = ? AND ol_d_id = ? AND ol_w_id = ?
read: SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?

# A TPC-W-like bookstore: the statements of the 14 interactions
read: /* gk:type=home */ SELECT c_fname, c_lname FROM customer WHERE c_id = ?
read: /* gk:type=home */ SELECT i_id, i_thumbnail FROM item WHERE i_id IN (?, ?, ?, ?, ?)
read: /* gk:type=new_products */ SELECT i_id, i_title, a_fname, a_lname FROM item, author WHERE item.i_a_id = author.a_id AND item.i_subject = ? ORDER BY item.i_pub_date DESC, item.i_title LIMIT 50
read: /* gk:type=best_sellers */ SELECT i_id, i_title, a_fname, a_lname FROM item, author, order_line WHERE item.i_id = order_line.ol_i_id AND item.i_a_id = author.a_id AND order_line.ol_o_id > (SELECT MAX(o_id) - 3333 FROM orders) AND item.i_subject = ? GROUP BY i_id, i_title, a_fname, a_lname ORDER BY SUM(ol_qty) DESC LIMIT 50
read: /* gk:type=product_detail */ SELECT * FROM item, author WHERE item.i_a_id = author.a_id AND i_id = ?
read: /* gk:type=search_results */ SELECT i_id, i_title, a_fname, a_lname FROM item, author WHERE item.i_a_id = author.a_id AND item.i_title LIKE ? ORDER BY item.i_title LIMIT 50
read: /* gk:type=search_results */ SELECT i_id, i_title, a_fname, a_lname FROM item JOIN author ON item.i_a_id = author.a_id WHERE author.a_lname LIKE ? ORDER BY item.i_title LIMIT 50
write volatile: /* gk:type=shopping_cart */ INSERT INTO shopping_cart (sc_id, sc_time) VALUES (?, NOW())
write: /* gk:type=shopping_cart */ INSERT INTO shopping_cart_line (scl_sc_id, scl_qty, scl_i_id) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE scl_qty = scl_qty + VALUES(scl_qty)
read: /* gk:type=shopping_cart */ SELECT * FROM shopping_cart_line, item WHERE scl_i_id = item.i_id AND scl_sc_id = ?
write: /* gk:type=shopping_cart */ DELETE FROM shopping_cart_line WHERE scl_sc_id = ? AND scl_i_id = ?
read: /* gk:type=customer_registration */ SELECT co_id FROM country WHERE co_name = ?
write: /* gk:type=customer_registration */ INSERT INTO address (addr_id, addr_street1, addr_street2, addr_city, addr_state, addr_zip, addr_co_id) VALUES (?, ?, ?, ?, ?, ?, ?)
write volatile: /* gk:type=customer_registration */ INSERT INTO customer (c_id, c_uname, c_passwd, c_fname, c_lname, c_addr_id, c_phone, c_email, c_since, c_last_login, c_login, c_expiration, c_discount, c_balance, c_ytd_pmt, c_birthdate, c_data) VALUES (?, ?, ?, ?, ?, ?, ?, ?, CURRENT_DATE, CURRENT_DATE, NOW(), DATE_ADD(NOW(), INTERVAL 2 HOUR), ?, 0, 0, ?, ?)
read: /* gk:type=buy_request */ SELECT * FROM customer, address, country WHERE customer.c_addr_id = address.addr_id AND address.addr_co_id = country.co_id AND customer.c_uname = ?
write volatile: /* gk:type=buy_request */ UPDATE customer SET c_login = NOW(), c_expiration = DATE_ADD(NOW(), INTERVAL 2 HOUR) WHERE c_id = ?
write volatile: /* gk:type=buy_confirm */ INSERT INTO orders (o_id, o_c_id, o_date, o_sub_total, o_tax, o_total, o_ship_type, o_ship_date, o_bill_addr_id, o_ship_addr_id, o_status) VALUES (?, ?, NOW(), ?, 8.25, ?, ?, DATE_ADD(NOW(), INTERVAL ? DAY), ?, ?, 'PENDING')
write: /* gk:type=buy_confirm */ INSERT INTO order_line (ol_id, ol_o_id, ol_i_id, ol_qty, ol_discount, ol_comments) VALUES (?, ?, ?, ?, ?, ?)
locking_read volatile: /* gk:type=buy_confirm */ SELECT i_stock FROM item WHERE i_id = ? FOR UPDATE
write: /* gk:type=buy_confirm */ UPDATE item SET i_stock = ? WHERE i_id = ?
write volatile: /* gk:type=buy_confirm */ INSERT INTO cc_xacts (cx_o_id, cx_type, cx_num, cx_name, cx_expire, cx_xact_amt, cx_xact_date, cx_co_id) VALUES (?, ?, ?, ?, ?, ?, NOW(), ?)
write: /* gk:type=buy_confirm */ DELETE FROM shopping_cart_line WHERE scl_sc_id = ?
read: /* gk:type=order_inquiry */ SELECT c_uname FROM customer WHERE c_id = ?
read: /* gk:type=order_display */ SELECT o_id FROM customer, orders WHERE customer.c_id = orders.o_c_id AND c_uname = ? ORDER BY o_date DESC, orders.o_id DESC LIMIT 1
read: /* gk:type=order_display */ SELECT orders.*, customer.*, cc_xacts.cx_type, ship.addr_street1 AS ship_addr_street1, bill.addr_street1 AS bill_addr_street1 FROM customer, address ship, address bill, cc_xacts, orders WHERE orders.o_id = ? AND cx_o_id = orders.o_id AND customer.c_id = orders.o_c_id AND orders.o_bill_addr_id = bill.addr_id AND orders.o_ship_addr_id = ship.addr_id
read: /* gk:type=admin_request */ SELECT * FROM item, author WHERE item.i_a_id = author.a_id AND i_id = ?
write volatile: /* gk:type=admin_confirm */ UPDATE item SET i_cost = ?, i_image = ?, i_thumbnail = ?, i_pub_date = CURRENT_DATE WHERE i_id = ?
read: /* gk:type=admin_confirm */ SELECT ol_i_id FROM orders, order_line WHERE orders.o_id = order_line.ol_o_id AND NOT (order_line.ol_i_id = ?) AND orders.o_c_id IN (SELECT o_c_id FROM orders, order_line WHERE orders.o_id = order_line.ol_o_id AND orders.o_id > (SELECT MAX(o_id) - 10000 FROM orders) AND order_line.ol_i_id = ?) GROUP BY ol_i_id ORDER BY SUM(ol_qty) DESC LIMIT 5
write: /* gk:type=admin_confirm */ UPDATE item SET i_related1 = ?, i_related2 = ?, i_related3 = ?, i_related4 = ?, i_related5 = ? WHERE i_id = ?

# Application shapes
read: SELECT u.id, p.title FROM app.users AS u LEFT JOIN app.posts p ON p.user_id = u.id WHERE u.id = ? ORDER BY p.created_at DESC LIMIT 10 OFFSET 20
read: SELECT * FROM (SELECT id, RANK() OVER (PARTITION BY cat ORDER BY score DESC) AS r FROM scores) ranked WHERE r <= 3
read volatile: WITH recent AS (SELECT * FROM orders WHERE created > NOW() - INTERVAL 1 DAY) SELECT customer_id, COUNT(*) FROM recent GROUP BY customer_id
read: SELECT a.x FROM t1 a WHERE NOT EXISTS (SELECT 1 FROM t2 b WHERE b.id = a.id) UNION SELECT y FROM t3
write: INSERT INTO archive SELECT * FROM orders WHERE created < ?
write: INSERT INTO totals (day, amount) SELECT DATE(created), SUM(amount) FROM payments GROUP BY DATE(created) ON DUPLICATE KEY UPDATE amount = VALUES(amount)
write: REPLACE INTO kv (k, v) VALUES (?, ?)
write: UPDATE accounts a JOIN transfers t ON t.account_id = a.id SET a.balance = a.balance - t.amount WHERE t.id = ?
write: DELETE s FROM sessions s JOIN users u ON u.id = s.user_id WHERE u.disabled = 1
write: DELETE FROM logs WHERE created < ? ORDER BY created LIMIT 1000
write volatile: CALL archive_old_orders(?)
session: SET NAMES utf8mb4
session: SET autocommit=1
session: SET SESSION sql_mode = 'STRICT_ALL_TABLES'
session volatile: SET @@session.time_zone = '+00:00'
session volatile: SELECT @@tx_isolation
session volatile uses=last_insert_id: SELECT LAST_INSERT_ID()
session volatile uses=get_lock: SELECT GET_LOCK('migrations', 10)
session volatile uses=lock_tables: LOCK TABLES t1 WRITE, t2 READ
session uses=unlock_tables: UNLOCK TABLES
session: USE shop
transaction: START TRANSACTION READ WRITE
transaction: ROLLBACK
transaction: SAVEPOINT s1
transaction: ROLLBACK TO SAVEPOINT s1
other volatile: SHOW VARIABLES LIKE 'max_connections'
other volatile: SHOW CREATE TABLE t1
other: EXPLAIN SELECT * FROM t1 WHERE id = 1
ddl volatile: ALTER TABLE t1 ADD INDEX idx_a (a)
ddl: TRUNCATE TABLE t1
ddl: RENAME TABLE t1 TO t1_old, t2 TO t1
ddl: CREATE TABLE t2 LIKE t1
ddl: DROP INDEX idx_a ON t1

# MariaDB syntax
write: INSERT INTO t (a) VALUES (1) RETURNING id, a
write: DELETE FROM t WHERE a > 10 RETURNING id
write: REPLACE INTO t VALUES (1, 'x') RETURNING *
ddl: CREATE SEQUENCE s START WITH 100 INCREMENT BY 10
write volatile: SELECT NEXT VALUE FOR s
write volatile: SELECT NEXTVAL(s)
session volatile: SELECT LASTVAL(s)
write volatile: INSERT INTO t (id, v) VALUES (NEXT VALUE FOR s, ?)
ddl: CREATE TABLE h (x INT) WITH SYSTEM VERSIONING
read: SELECT * FROM h FOR SYSTEM_TIME AS OF TIMESTAMP '2024-01-01 00:00:00'
read volatile: SELECT * FROM h FOR SYSTEM_TIME BETWEEN (NOW() - INTERVAL 1 YEAR) AND NOW()
write: DELETE HISTORY FROM h BEFORE SYSTEM_TIME '2024-01-01 00:00:00'
session volatile uses=user_variable: /*M!100100 SET STATEMENT max_statement_time=1 FOR */ SET @x = 1
read: SELECT /*M!100000 SQL_NO_CACHE */ id FROM t WHERE id = 1
session volatile uses=user_variable: /*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */
read: SET STATEMENT max_statement_time=5 FOR SELECT * FROM big
write: BEGIN NOT ATOMIC DECLARE x INT; END
read: VALUES (1, 'a'), (2, 'b')
read: TABLE t1

# Connection state that session tracking does not report, which a pooled proxy must see
read uses=found_rows: SELECT SQL_CALC_FOUND_ROWS id, title FROM posts WHERE author_id = ? ORDER BY created DESC LIMIT 20
session volatile: SELECT FOUND_ROWS()
read volatile uses=connection_id: SELECT CONNECTION_ID()
read volatile uses=connection_id: SELECT id FROM jobs WHERE owner = CONNECTION_ID()
write volatile uses=last_insert_id: INSERT INTO audit (order_id, note) VALUES (LAST_INSERT_ID(), ?)
session volatile uses=user_variable: SELECT @rownum := @rownum + 1 AS pos, name FROM players ORDER BY score DESC
session volatile: SELECT * FROM orders WHERE customer_id = @cid
read: SELECT 'GET_LOCK(', note FROM notes /* RELEASE_LOCK('x') */
locking_read volatile: SELECT * FROM t1 WHERE id = ? LOCK IN SHARE MODE
session uses=temporary_table: CREATE TEMPORARY TABLE tmp_ids (id INT PRIMARY KEY)
session uses=drop_temporary_table: DROP TEMPORARY TABLE IF EXISTS tmp_ids
session volatile uses=release_lock: SELECT RELEASE_LOCK('migrations')
session volatile uses=user_variable: SET @saved_cs_client = @@character_set_client
session uses=next_transaction: SET TRANSACTION ISOLATION LEVEL READ COMMITTED
session: SET SESSION TRANSACTION ISOLATION LEVEL REPEATABLE READ
session uses=session_tracking: SET SESSION session_track_system_variables = '*'
session uses=prepare: PREPARE stmt1 FROM 'SELECT * FROM t1 WHERE id = ?'
session uses=deallocate: DEALLOCATE PREPARE stmt1
other volatile uses=handler: HANDLER t1 OPEN
transaction uses=xa_start: XA START 'xid1'
transaction uses=xa_end: XA COMMIT 'xid1'
other volatile uses=kill: KILL QUERY 42
