<?php
// Connects with mysqli or PDO, runs the statement read from stdin and prints "ok", or the
// error as "code|message". Usage: client.php mysqli|pdo HOST PORT USER PASSWORD DATABASE
[, $api, $host, $port, $user, $password, $database] = $argv;
$sql = stream_get_contents(STDIN);
if ($api === 'mysqli') {
    mysqli_report(MYSQLI_REPORT_OFF);
    $c = @new mysqli($host, $user, $password, $database, (int) $port);
    if ($c->connect_errno) {
        echo $c->connect_errno, '|', $c->connect_error, "\n";
        exit;
    }
    if (!@$c->query($sql)) {
        echo $c->errno, '|', $c->error, "\n";
        exit;
    }
    echo "ok\n";
    exit;
}
try {
    $p = new PDO("mysql:host=$host;port=$port;dbname=$database", $user, $password,
        [PDO::ATTR_ERRMODE => PDO::ERRMODE_EXCEPTION]);
    $p->query($sql)->fetchAll();
    echo "ok\n";
} catch (PDOException $e) {
    echo $e->errorInfo[1] ?? $e->getCode(), '|', $e->getMessage(), "\n";
}
