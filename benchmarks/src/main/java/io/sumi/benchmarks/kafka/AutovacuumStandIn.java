package io.sumi.benchmarks.kafka;

import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.ScheduledFuture;
import java.util.concurrent.TimeUnit;
import org.jspecify.annotations.Nullable;

/**
 * What autovacuum would do to the ledger (and the case's other tables) during a case, on a server
 * where it is off (this machine's PostgreSQL runs with {@code autovacuum = off}; PostgreSQL's
 * default, and every production server, has it on).
 *
 * <p>Without it, the ledger keeps the statistics of the empty table the case starts with, so the
 * plans PostgreSQL caches for the ledger's prepared statements while the table is one page (a
 * sequential scan is the cheapest way to read one page) are never replanned, and every statement
 * reads the whole table: a record-lease drain fell to about 130 records/s at 120,000 rows. A
 * production ledger is analyzed by autovacuum, which replans them. So the stand-in checks every
 * {@code autovacuum_naptime} with autovacuum's own default thresholds: {@code ANALYZE} once more
 * than 50 + 10 % of the rows changed since the last one, {@code VACUUM} once more than 50 + 20 % are
 * dead.
 */
final class AutovacuumStandIn implements AutoCloseable {

    private final @Nullable ScheduledExecutorService scheduler;

    private AutovacuumStandIn(@Nullable ScheduledExecutorService scheduler) {
        this.scheduler = scheduler;
    }

    static AutovacuumStandIn startIfOff(String url, String user, String password) throws SQLException {
        long naptimeSeconds;
        try (Connection c = DriverManager.getConnection(url, user, password);
                Statement s = c.createStatement();
                ResultSet rs = s.executeQuery("SELECT current_setting('autovacuum'),"
                        + " EXTRACT(EPOCH FROM current_setting('autovacuum_naptime')::interval)::bigint")) {
            rs.next();
            if (rs.getString(1).equals("on")) {
                return new AutovacuumStandIn(null);
            }
            naptimeSeconds = rs.getLong(2);
        }
        ScheduledExecutorService scheduler = Executors.newSingleThreadScheduledExecutor(runnable -> {
            Thread thread = new Thread(runnable, "autovacuum-stand-in");
            thread.setDaemon(true);
            return thread;
        });
        // Runs until the scheduler shuts down; check() logs its own failures.
        ScheduledFuture<?> unused = scheduler.scheduleWithFixedDelay(
                () -> check(url, user, password), naptimeSeconds, naptimeSeconds, TimeUnit.SECONDS);
        return new AutovacuumStandIn(scheduler);
    }

    private static void check(String url, String user, String password) {
        try (Connection c = DriverManager.getConnection(url, user, password);
                Statement s = c.createStatement()) {
            // Every table of the database, not only Sumi's ledger: the work's and the alternatives'
            // tables (schema bench, one of them also named processed_messages) are planned the same way.
            List<String> vacuum = new ArrayList<>();
            List<String> analyze = new ArrayList<>();
            try (ResultSet rs = s.executeQuery("SELECT quote_ident(t.schemaname) || '.' || quote_ident(t.relname),"
                    + " t.n_mod_since_analyze > 50 + 0.1 * GREATEST(c.reltuples, 0),"
                    + " t.n_dead_tup > 50 + 0.2 * GREATEST(c.reltuples, 0)"
                    + " FROM pg_stat_user_tables t JOIN pg_class c ON c.oid = t.relid")) {
                while (rs.next()) {
                    if (rs.getBoolean(3)) {
                        vacuum.add(rs.getString(1));
                    }
                    if (rs.getBoolean(2)) {
                        analyze.add(rs.getString(1));
                    }
                }
            }
            for (String table : vacuum) {
                s.execute("VACUUM " + table);
            }
            for (String table : analyze) {
                s.execute("ANALYZE " + table);
            }
        } catch (SQLException ex) {
            System.err.printf(Locale.ROOT, "autovacuum stand-in: %s%n", ex.getMessage());
        }
    }

    @Override
    public void close() {
        if (scheduler != null) {
            scheduler.shutdownNow();
        }
    }
}
