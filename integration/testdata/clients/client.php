<?php
// Connects with mysqli or PDO, runs the statement read from stdin and prints the rows it
// returned, each value in hexadecimal (NULL as NULL), a line a row, then "ok"; or the error
// as "code|message". Usage: client.php mysqli|pdo HOST PORT USER PASSWORD DATABASE
[, $api, $host, $port, $user, $password, $database] = $argv;
$sql = stream_get_contents(STDIN);
function show(array $rows): void {
    foreach ($rows as $row) {
        echo implode(',', array_map(fn($v) => $v === null ? 'NULL' : bin2hex((string) $v), $row)), "\n";
    }
}
if ($api === 'mysqli') {
    mysqli_report(MYSQLI_REPORT_OFF);
    $c = @new mysqli($host, $user, $password, $database, (int) $port);
    if ($c->connect_errno) {
        echo $c->connect_errno, '|', $c->connect_error, "\n";
        exit;
    }
    $r = @$c->query($sql);
    if (!$r) {
        echo $c->errno, '|', $c->error, "\n";
        exit;
    }
    if ($r instanceof mysqli_result) {
        show($r->fetch_all(MYSQLI_NUM));
    }
    echo "ok\n";
    exit;
}
try {
    $p = new PDO("mysql:host=$host;port=$port;dbname=$database", $user, $password,
        [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    show($p->query($sql)->fetchAll(PDO::FETCH_NUM));
    echo "ok\n";
} catch (PDOException $e) {
    echo $e->errorInfo[1] ?? $e->getCode(), '|', $e->getMessage(), "\n";
}
