package io.sumi.faults.driver;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Timestamp;
import java.time.Instant;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * Watches the run from outside the applications: counts orders, pending outbox rows and orders
 * not yet shipped or charged, and measures each fault's recovery time (from the end of the fault
 * until every order committed before that moment is shipped and charged).
 */
final class ProgressMonitor implements AutoCloseable {

    /**
     * One fault and its recovery: {@code recoveryMillis} until both consumers' counts advance
     * past what they were just after the fault (-1: never), {@code catchUpMillis} until every order
     * committed before the end of the fault is shipped and charged (-1: never).
     */
    static final class Fault {
        final String kind;
        final Instant end;
        volatile long recoveryMillis = -1;
        volatile long catchUpMillis = -1;
        long baselineShipments = -1;
        long baselineRequests = -1;

        Fault(String kind, Instant end) {
            this.kind = kind;
            this.end = end;
        }
    }

    record Snapshot(int orders, int pending, int unshipped, int uncharged) {}

    private final String url;
    private final PaymentProvider provider;
    private final List<Fault> faults = new CopyOnWriteArrayList<>();
    private final Thread thread;
    private volatile boolean running = true;
    private volatile Snapshot snapshot = new Snapshot(0, -1, -1, -1);
    private Connection connection;

    ProgressMonitor(String url, PaymentProvider provider) {
        this.url = url + "?connectTimeout=2&socketTimeout=10";
        this.provider = provider;
        this.thread = new Thread(this::loop, "fault-progress");
        this.thread.setDaemon(true);
        this.thread.start();
    }

    void faultEnded(String kind, Instant end) {
        faults.add(new Fault(kind, end));
    }

    List<Fault> faults() {
        return faults;
    }

    Snapshot snapshot() {
        return snapshot;
    }

    private void loop() {
        while (running) {
            try {
                tick();
            } catch (SQLException ex) {
                closeConnection(); // the database is down or restarting: try again
            }
            try {
                Thread.sleep(400);
            } catch (InterruptedException ex) {
                return;
            }
        }
    }

    private void tick() throws SQLException {
        if (connection == null) {
            connection = DriverManager.getConnection(url, "postgres", "");
        }
        int orders = count("SELECT count(*) FROM orders");
        int pending = count("SELECT count(*) FROM outbox WHERE dispatched_at IS NULL");
        int unshipped = count(
                "SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.id)");
        long shipments = count("SELECT count(*) FROM shipments");
        long requests = provider.requests();
        int uncharged = 0;
        try (PreparedStatement statement = connection.prepareStatement("SELECT id FROM orders");
                ResultSet rows = statement.executeQuery()) {
            while (rows.next()) {
                if (provider.realCharges(rows.getString(1)) == 0) {
                    uncharged++;
                }
            }
        }
        snapshot = new Snapshot(orders, pending, unshipped, uncharged);
        Instant now = Instant.now();
        for (Fault fault : faults) {
            if (fault.baselineShipments < 0) {
                // The first look after the fault ended: what was consumed before it does not count.
                fault.baselineShipments = shipments;
                fault.baselineRequests = requests;
            } else if (fault.recoveryMillis < 0
                    && shipments > fault.baselineShipments
                    && requests > fault.baselineRequests) {
                fault.recoveryMillis = Math.max(0, now.toEpochMilli() - fault.end.toEpochMilli());
            }
            if (fault.catchUpMillis < 0 && caughtUp(fault.end)) {
                fault.catchUpMillis = Math.max(0, now.toEpochMilli() - fault.end.toEpochMilli());
            }
        }
    }

    private boolean caughtUp(Instant end) throws SQLException {
        try (PreparedStatement statement =
                connection.prepareStatement("SELECT id, EXISTS (SELECT 1 FROM shipments s WHERE s.order_id = o.id)"
                        + " FROM orders o WHERE o.created_at <= ?")) {
            statement.setTimestamp(1, Timestamp.from(end));
            try (ResultSet rows = statement.executeQuery()) {
                while (rows.next()) {
                    if (!rows.getBoolean(2) || provider.realCharges(rows.getString(1)) == 0) {
                        return false;
                    }
                }
            }
        }
        return true;
    }

    private int count(String sql) throws SQLException {
        try (PreparedStatement statement = connection.prepareStatement(sql);
                ResultSet rows = statement.executeQuery()) {
            rows.next();
            return rows.getInt(1);
        }
    }

    private void closeConnection() {
        if (connection != null) {
            try {
                connection.close();
            } catch (SQLException ignored) {
                // gone already
            }
            connection = null;
        }
    }

    @Override
    public void close() {
        running = false;
        thread.interrupt();
        try {
            thread.join(5000);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        closeConnection();
    }
}
