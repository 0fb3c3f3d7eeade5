package classify

import "strings"

// kwID names the keywords the classifier acts on; every other keyword is kwOther.
type kwID uint8

const (
	kwNone kwID = iota
	kwOther
	kwAlter
	kwAnalyze
	kwAnd
	kwAs
	kwBegin
	kwCall
	kwChain
	kwCreate
	kwDeallocate
	kwDelete
	kwDesc
	kwDescribe
	kwDo
	kwDrop
	kwDual
	kwDuplicate
	kwExcept
	kwExecute
	kwExists
	kwExplain
	kwFor
	kwFormat
	kwFrom
	kwFulltext
	kwGroup
	kwHaving
	kwHistory
	kwIf
	kwIgnore
	kwIn
	kwIndex
	kwInsert
	kwIntersect
	kwInto
	kwJoin
	kwLateral
	kwLimit
	kwLoad
	kwLock
	kwLowPriority
	kwDelayed
	kwHighPriority
	kwMode
	kwNext
	kwNo
	kwNot
	kwOn
	kwOnline
	kwOr
	kwOrder
	kwPrepare
	kwPrevious
	kwQuick
	kwRecursive
	kwRelease
	kwRename
	kwReplace
	kwReturning
	kwRollback
	kwSavepoint
	kwSelect
	kwSequence
	kwSet
	kwShare
	kwSpatial
	kwStart
	kwStatement
	kwStraightJoin
	kwTable
	kwTables
	kwTemporary
	kwTo
	kwTransaction
	kwTruncate
	kwUnion
	kwUnique
	kwUnlock
	kwUpdate
	kwUse
	kwUsing
	kwValue
	kwValues
	kwWhere
	kwWindow
	kwWith
	kwWork
	kwXA
	kwCommit
	kwData
	kwXML
	kwEnd
	// Functions with effects beyond their result, or that read the connection's own state.
	kwGetLock
	kwReleaseLock
	kwReleaseAllLocks
	kwLastInsertID
	kwFoundRows
	kwRowCount
	kwNextval
	kwSetval
	kwLastval
	kwJSONTable
	kwConnectionID
	kwCalcFoundRows
	// Statements that only read or administer: the kind is other.
	kwShow
	kwHelp
	kwAdmin
	kwKill
	kwHandler
	// Statements that change privileges or maintain tables: the kind is DDL.
	kwGrant
)

// kwFlags says how a keyword behaves in the text.
type kwFlags uint8

const (
	// reserved words cannot be table names or aliases without quotes.
	reserved kwFlags = 1 << iota
	// function words are written name(args), without a space in the digest, and what is in
	// their parentheses is arguments.
	function
	// volatile words are functions whose result may differ between two runs over the same
	// data (Result.Volatile): called with "(", or reserved ones also without it.
	volatile
)

type keyword struct {
	id    kwID
	flags kwFlags
	// upper is the keyword as the digest writes it.
	upper string
}

// keywords indexes keywordList by upper-case spelling; index 0 of keywordList is no keyword.
var (
	keywords    = map[string]uint16{}
	keywordList = []keyword{{}}
)

func init() {
	// Reserved words of MySQL 8 and MariaDB 11 (those that can follow a table name as well,
	// so that they are never taken for an alias).
	for _, w := range strings.Fields(`ACCESSIBLE ADD ALL ALTER ANALYZE AND ANY AS ASC ASENSITIVE
		BEFORE BETWEEN BIGINT BINARY BLOB BOTH BY CALL CASCADE CASE CHANGE CHAR CHARACTER CHECK
		COLLATE COLUMN CONDITION CONSTRAINT CONTINUE CONVERT CREATE CROSS CURRENT_DATE
		CURRENT_ROLE CURRENT_TIME CURRENT_TIMESTAMP CURRENT_USER CURSOR DATABASE DATABASES
		DAY_HOUR DAY_MICROSECOND DAY_MINUTE DAY_SECOND DEC DECIMAL DECLARE DEFAULT DELAYED
		DELETE DELETE_DOMAIN_ID DESC DESCRIBE DETERMINISTIC DISTINCT DISTINCTROW DIV DO_DOMAIN_IDS
		DOUBLE DROP DUAL EACH ELSE ELSEIF ENCLOSED ESCAPED EXCEPT EXISTS EXIT EXPLAIN FALSE FETCH
		FLOAT FLOAT4 FLOAT8 FOR FORCE FOREIGN FROM FULLTEXT GENERAL GRANT GROUP HAVING
		HIGH_PRIORITY HOUR_MICROSECOND HOUR_MINUTE HOUR_SECOND IF IGNORE IGNORE_DOMAIN_IDS
		IGNORE_SERVER_IDS IN INDEX INFILE INNER INOUT INSENSITIVE INSERT INT INT1 INT2 INT3 INT4
		INT8 INTEGER INTERSECT INTERVAL INTO IS ITERATE JOIN KEY KEYS KILL LATERAL LEADING LEAVE
		LEFT LIKE LIMIT LINEAR LINES LOAD LOCALTIME LOCALTIMESTAMP LOCK LONG LONGBLOB LONGTEXT
		LOOP LOW_PRIORITY MASTER_HEARTBEAT_PERIOD MASTER_SSL_VERIFY_SERVER_CERT MATCH MAXVALUE
		MEDIUMBLOB MEDIUMINT MEDIUMTEXT MIDDLEINT MINUTE_MICROSECOND MINUTE_SECOND MOD MODIFIES
		NATURAL NOT NO_WRITE_TO_BINLOG NULL NUMERIC OF OFFSET ON OPTIMIZE OPTION OPTIONALLY OR
		ORDER OUT OUTER OUTFILE OVER PAGE_CHECKSUM PARSE_VCOL_EXPR PARTITION POSITION PRECISION
		PRIMARY PROCEDURE PURGE RANGE READ READS READ_WRITE REAL RECURSIVE REF_SYSTEM_ID
		REFERENCES REGEXP RELEASE RENAME REPEAT REPLACE REQUIRE RESIGNAL RESTRICT RETURN
		RETURNING REVOKE RIGHT RLIKE ROW_NUMBER ROWS SCHEMA SCHEMAS SECOND_MICROSECOND SELECT
		SENSITIVE SEPARATOR SET SHOW SIGNAL SLOW SMALLINT SOME SPATIAL SPECIFIC SQL SQLEXCEPTION
		SQLSTATE SQLWARNING SQL_BIG_RESULT SQL_CALC_FOUND_ROWS SQL_SMALL_RESULT SSL STARTING
		STATS_AUTO_RECALC STATS_PERSISTENT STATS_SAMPLE_PAGES STRAIGHT_JOIN TABLE TERMINATED
		THEN TINYBLOB TINYINT TINYTEXT TO TRAILING TRIGGER TRUE UNDO UNION UNIQUE UNLOCK
		UNSIGNED UPDATE USAGE USE USING UTC_DATE UTC_TIME UTC_TIMESTAMP VALUES VARBINARY
		VARCHAR VARCHARACTER VARYING WHEN WHERE WHILE WINDOW WITH WRITE XOR YEAR_MONTH ZEROFILL`) {
		add(w, reserved)
	}
	// Reserved words that are also functions.
	for _, w := range strings.Fields(`CHAR CONVERT CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
		CURRENT_USER DATABASE IF INSERT INTERVAL LEFT LOCALTIME LOCALTIMESTAMP MATCH MOD REPEAT
		REPLACE RIGHT ROW_NUMBER SCHEMA UTC_DATE UTC_TIME UTC_TIMESTAMP`) {
		add(w, reserved|function)
	}
	// Other keywords and common functions: written in upper case in the digest, but they may
	// name tables and columns.
	for _, w := range strings.Fields(`ACTION AFTER AGAINST ALGORITHM ATOMIC AUTOCOMMIT
		AUTO_INCREMENT AVG_ROW_LENGTH BEGIN BINLOG BOOLEAN BTREE CACHE CASCADED CHAIN CHARSET
		CHECKSUM COLUMNS COMMENT COMMIT COMMITTED COMPACT COMPRESSED CONCURRENT CONSISTENT
		CYCLE DATA DATE DATETIME DEALLOCATE DEFINER DELAY_KEY_WRITE DISABLE DISCARD DO DUMPFILE
		DUPLICATE DYNAMIC ENABLE ENGINE ENGINES ENUM ERRORS ESCAPE EVENT EVENTS EXECUTE
		EXPANSION EXTENDED FIELDS FIRST FIXED FLUSH FOLLOWING FORMAT FULL FUNCTION GLOBAL
		GRANTS HANDLER HASH HELP HISTORY IDENTIFIED IMPORT INCREMENT INDEXES INSTALL INVISIBLE
		INVOKER ISOLATION JSON KILL LAST LEVEL LOCAL LOCKED LOGS MASTER MAXVALUE MINVALUE MODE
		NAMES NEXT NO NOCACHE NOCYCLE NOMAXVALUE NOMINVALUE NOWAIT OFF ONLINE ONLY OPEN PERIOD
		PERSISTENT PRECEDING PREPARE PREVIOUS PROCESSLIST QUICK REDUNDANT REPAIR REPEATABLE
		REPLICA RESET RESTART ROLE ROLLBACK ROW ROW_FORMAT SAVEPOINT SECURITY SEQUENCE
		SERIALIZABLE SESSION SHARE SHUTDOWN SIGNED SKIP SLAVE SNAPSHOT SOUNDS SQL_CACHE
		SQL_NO_CACHE START STARTS STATEMENT STOP STORAGE SYSTEM SYSTEM_TIME TABLES TABLESPACE
		TEMPORARY TEMPTABLE TEXT TIME TIMESTAMP TRANSACTION TRIGGERS TRUNCATE UNBOUNDED
		UNCOMMITTED UNDEFINED UNINSTALL UNKNOWN VALUE VARIABLES VERSIONING VIEW WAIT WARNINGS
		WITHOUT WORK XA XML END`) {
		add(w, 0)
	}
	for _, w := range strings.Fields(`ABS ADDDATE ASCII AVG BIT_AND BIT_COUNT BIT_OR BIT_XOR CAST
		CEIL CEILING CHAR_LENGTH CHARACTER_LENGTH COALESCE CONCAT CONCAT_WS CONNECTION_ID COUNT
		CURDATE CURTIME DATE_ADD DATE_FORMAT DATE_SUB DATEDIFF DAY DAYOFMONTH DAYOFWEEK
		DAYOFYEAR EXP EXTRACT FIELD FIND_IN_SET FLOOR FOUND_ROWS FROM_UNIXTIME GET_LOCK
		GREATEST GROUP_CONCAT HEX HOUR IFNULL INET_ATON INET_NTOA INSTR IS_FREE_LOCK
		IS_USED_LOCK ISNULL JSON_ARRAY JSON_CONTAINS JSON_EXTRACT JSON_OBJECT JSON_SET
		JSON_TABLE JSON_UNQUOTE LAG LAST_INSERT_ID LASTVAL LCASE LEAD LEAST LENGTH LN LOCATE
		LOG LOWER LPAD LTRIM MAX MD5 MICROSECOND MIN MINUTE MONTH NEXTVAL NOW NULLIF POW POWER
		QUARTER RAND RANK RELEASE_ALL_LOCKS RELEASE_LOCK ROUND ROW_COUNT RPAD RTRIM SEC_TO_TIME
		SECOND SETVAL SHA1 SHA2 SIGN SLEEP SQRT STD STDDEV STR_TO_DATE SUBDATE SUBSTR SUBSTRING
		SUBSTRING_INDEX SUM SYSDATE TIME_TO_SEC TIMEDIFF TIMESTAMPADD TIMESTAMPDIFF TO_DAYS TRIM
		TRUNCATE UCASE UNHEX UNIX_TIMESTAMP UPPER UUID UUID_SHORT VAR_POP VARIANCE VERSION WEEK
		WEEKDAY YEAR YEARWEEK`) {
		add(w, function)
	}
	for w, id := range map[string]kwID{
		"ALTER": kwAlter, "ANALYZE": kwAnalyze, "AND": kwAnd, "AS": kwAs, "BEGIN": kwBegin,
		"CALL": kwCall, "CHAIN": kwChain, "COMMIT": kwCommit, "CREATE": kwCreate,
		"DEALLOCATE": kwDeallocate, "DELETE": kwDelete, "DESC": kwDesc, "DESCRIBE": kwDescribe,
		"DO": kwDo, "DROP": kwDrop, "DUAL": kwDual, "DUPLICATE": kwDuplicate, "EXCEPT": kwExcept,
		"EXECUTE": kwExecute, "EXISTS": kwExists, "EXPLAIN": kwExplain, "FOR": kwFor,
		"FORMAT": kwFormat, "FROM": kwFrom, "FULLTEXT": kwFulltext, "GROUP": kwGroup,
		"HAVING": kwHaving, "HISTORY": kwHistory, "IF": kwIf, "IGNORE": kwIgnore, "IN": kwIn,
		"INDEX": kwIndex, "INSERT": kwInsert, "INTERSECT": kwIntersect, "INTO": kwInto,
		"JOIN": kwJoin, "LATERAL": kwLateral, "LIMIT": kwLimit, "LOAD": kwLoad, "LOCK": kwLock,
		"LOW_PRIORITY": kwLowPriority, "DELAYED": kwDelayed, "HIGH_PRIORITY": kwHighPriority,
		"MODE": kwMode, "NEXT": kwNext, "NO": kwNo, "NOT": kwNot, "ON": kwOn, "ONLINE": kwOnline,
		"OR": kwOr, "ORDER": kwOrder, "PREPARE": kwPrepare, "PREVIOUS": kwPrevious,
		"QUICK": kwQuick, "RECURSIVE": kwRecursive, "RELEASE": kwRelease, "RENAME": kwRename,
		"REPLACE": kwReplace, "RETURNING": kwReturning, "ROLLBACK": kwRollback,
		"SAVEPOINT": kwSavepoint, "SELECT": kwSelect, "SEQUENCE": kwSequence, "SET": kwSet,
		"SHARE": kwShare, "SPATIAL": kwSpatial, "START": kwStart, "STATEMENT": kwStatement,
		"STRAIGHT_JOIN": kwStraightJoin, "TABLE": kwTable, "TABLES": kwTables,
		"TEMPORARY": kwTemporary, "TO": kwTo, "TRANSACTION": kwTransaction,
		"TRUNCATE": kwTruncate, "UNION": kwUnion, "UNIQUE": kwUnique, "UNLOCK": kwUnlock,
		"UPDATE": kwUpdate, "USE": kwUse, "USING": kwUsing, "VALUE": kwValue, "VALUES": kwValues,
		"WHERE": kwWhere, "WINDOW": kwWindow, "WITH": kwWith, "WORK": kwWork, "XA": kwXA,
		"DATA": kwData, "XML": kwXML, "END": kwEnd,
		"GET_LOCK": kwGetLock, "RELEASE_LOCK": kwReleaseLock, "RELEASE_ALL_LOCKS": kwReleaseAllLocks,
		"LAST_INSERT_ID": kwLastInsertID, "FOUND_ROWS": kwFoundRows, "ROW_COUNT": kwRowCount,
		"NEXTVAL": kwNextval, "SETVAL": kwSetval, "LASTVAL": kwLastval, "JSON_TABLE": kwJSONTable,
		"CONNECTION_ID": kwConnectionID, "SQL_CALC_FOUND_ROWS": kwCalcFoundRows,
		"SHOW": kwShow, "HELP": kwHelp, "KILL": kwKill, "HANDLER": kwHandler,
		"BINLOG": kwAdmin, "CACHE": kwAdmin, "CHECKSUM": kwAdmin, "FLUSH": kwAdmin,
		"INSTALL": kwAdmin, "PURGE": kwAdmin, "RESET": kwAdmin,
		"SHUTDOWN": kwAdmin, "STOP": kwAdmin, "UNINSTALL": kwAdmin, "CHANGE": kwAdmin,
		"CHECK": kwAdmin,
		"GRANT": kwGrant, "REVOKE": kwGrant, "OPTIMIZE": kwGrant, "REPAIR": kwGrant,
	} {
		keywordList[listed(w)].id = id
	}
	// Functions of the clock, random and unique values, the connection and the user, named
	// locks and sequences. Volatile functions the list does not hold (USER, SESSION_USER,
	// SYSTEM_USER, SYS_GUID, RANDOM_BYTES, BENCHMARK, MASTER_POS_WAIT, ...) are unknown
	// functions, volatile as such; listing them would change the digests that hold them.
	for _, w := range strings.Fields(`CURDATE CURRENT_DATE CURRENT_TIME CURRENT_TIMESTAMP
		CURTIME LOCALTIME LOCALTIMESTAMP NOW SYSDATE UNIX_TIMESTAMP UTC_DATE UTC_TIME
		UTC_TIMESTAMP RAND UUID UUID_SHORT CONNECTION_ID CURRENT_ROLE CURRENT_USER
		FOUND_ROWS LAST_INSERT_ID ROW_COUNT SLEEP GET_LOCK IS_FREE_LOCK IS_USED_LOCK
		RELEASE_ALL_LOCKS RELEASE_LOCK LASTVAL NEXTVAL SETVAL`) {
		keywordList[listed(w)].flags |= volatile
	}
}

// listed returns the index in keywordList of a keyword the lists above hold.
func listed(w string) uint16 {
	i, ok := keywords[w]
	if !ok {
		panic("classify: keyword " + w + " is not listed")
	}
	return i
}

func add(w string, flags kwFlags) {
	i, ok := keywords[w]
	if !ok {
		i = uint16(len(keywordList))
		keywordList = append(keywordList, keyword{id: kwOther, upper: w})
		keywords[w] = i
	}
	keywordList[i].flags |= flags
}

// slots is an open-addressing hash table over keywordList, faster than the map for the
// one lookup every word of every statement makes. It is filled once the list is complete.
var slots [1 << 11]uint16

func init() {
	for i := 1; i < len(keywordList); i++ {
		h := keywordHash([]byte(keywordList[i].upper))
		for slots[h] != 0 {
			h = (h + 1) & (uint32(len(slots)) - 1)
		}
		slots[h] = uint16(i)
	}
}

func keywordHash(upper []byte) uint32 {
	h := uint32(2166136261)
	for _, c := range upper {
		h = (h ^ uint32(c)) * 16777619
	}
	return h & (uint32(len(slots)) - 1)
}

// lookup finds the keyword word spells, in any letter case: its index in keywordList, or 0.
func lookup(word []byte) uint16 {
	var buf [32]byte
	if len(word) > len(buf) {
		return 0
	}
	h := uint32(2166136261)
	for i, c := range word {
		if c >= 'a' && c <= 'z' {
			c -= 'a' - 'A'
		}
		buf[i] = c
		h = (h ^ uint32(c)) * 16777619
	}
	upper := buf[:len(word)]
	for h &= uint32(len(slots)) - 1; ; h = (h + 1) & (uint32(len(slots)) - 1) {
		i := slots[h]
		if i == 0 || keywordList[i].upper == string(upper) {
			return i
		}
	}
}
