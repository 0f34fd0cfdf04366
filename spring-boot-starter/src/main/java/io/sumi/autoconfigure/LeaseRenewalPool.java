package io.sumi.autoconfigure;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.micrometer.core.instrument.MeterRegistry;
import java.io.Closeable;
import java.io.IOException;
import java.sql.SQLException;
import java.time.Duration;
import javax.sql.DataSource;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.util.ClassUtils;

/**
 * The connections lease renewals take ({@code sumi.consumer.renewal-pool}): a HikariCP pool of
 * their own, configured as the application's pool is (the same URL, credentials, driver
 * properties, schema and init SQL), but small, filled only while renewals need it, and with a
 * connection timeout shorter than the lease.
 *
 * <p>Why: on the application's pool a renewal waits in the same queue as every other borrower,
 * for up to that pool's connection timeout (HikariCP's default, 30 s, is Sumi's default lease),
 * so a pool held by busy handlers or other work lets the leases of running handlers lapse, and
 * another instance runs their messages too (issue 19 A14). Renewals run on two threads, so two
 * connections never make a renewal wait for another.
 *
 * <p>It is not a {@link DataSource} bean on purpose: a second DataSource in the context would
 * turn off Boot's single-DataSource auto-configuration (JdbcTemplate, the transaction manager,
 * Flyway) and Sumi's own. It is closed with the context, after the executor, which stops
 * renewing when it closes.
 */
final class LeaseRenewalPool implements AutoCloseable {

    private static final Logger log = LoggerFactory.getLogger(LeaseRenewalPool.class);

    private static final String HIKARI = "com.zaxxer.hikari.HikariDataSource";

    private final @Nullable DataSource dataSource;

    private LeaseRenewalPool(@Nullable DataSource dataSource) {
        this.dataSource = dataSource;
    }

    /**
     * The renewal pool for the ledger on {@code ledger}, or none (renewals then share the ledger's
     * DataSource) when {@code size} is 0 or the ledger's DataSource is not a HikariCP pool.
     *
     * @throws IllegalStateException if the connection timeout is not shorter than the lease
     */
    static LeaseRenewalPool of(DataSource ledger, SumiProperties.Consumer consumer, @Nullable MeterRegistry meters) {
        SumiProperties.RenewalPool settings = consumer.renewalPool();
        if (!consumer.leaseRenewal() || settings.size() == 0) {
            return new LeaseRenewalPool(null);
        }
        Duration connectionTimeout = settings.connectionTimeout(consumer.lease());
        DataSource pool = ClassUtils.isPresent(HIKARI, LeaseRenewalPool.class.getClassLoader())
                ? Hikari.renewalPool(ledger, settings.size(), connectionTimeout, meters)
                : null;
        if (pool == null) {
            log.info(
                    "Sumi's lease renewals share the ledger's DataSource ({}), which is no HikariCP pool: with every"
                            + " connection taken for longer than a lease, running lease-mode handlers lose their claims."
                            + " To give renewals connections of their own, define the ProcessedMessageStore bean with"
                            + " JdbcProcessedMessageStore.builder(dataSource).renewalDataSource(...)",
                    ledger.getClass().getName());
        }
        return new LeaseRenewalPool(pool);
    }

    /** The renewals' DataSource, or {@code null} for none (they share the ledger's). */
    @Nullable
    DataSource dataSource() {
        return dataSource;
    }

    @Override
    public void close() {
        if (dataSource instanceof Closeable pool) {
            try {
                pool.close();
            } catch (IOException ex) {
                log.warn("Could not close Sumi's lease renewal pool: {}", ex.toString());
            }
        }
    }

    /** The HikariCP part, loaded only when HikariCP is on the class path. */
    private static final class Hikari {

        static @Nullable DataSource renewalPool(
                DataSource ledger, int size, Duration connectionTimeout, @Nullable MeterRegistry meters) {
            HikariDataSource application = unwrap(ledger);
            if (application == null) {
                return null;
            }
            HikariConfig config = new HikariConfig();
            application.copyStateTo(config);
            String name = application.getPoolName() != null ? application.getPoolName() : "HikariPool";
            config.setPoolName(name + "-sumi-renewal");
            config.setMaximumPoolSize(size);
            // Connections exist while renewals need them (up to the idle timeout after), not for ever.
            config.setMinimumIdle(0);
            config.setConnectionTimeout(connectionTimeout.toMillis());
            // The application's pool has already checked the database; a renewal pool never fails start-up.
            config.setInitializationFailTimeout(-1);
            if (meters != null && config.getMetricRegistry() == null && config.getMetricsTrackerFactory() == null) {
                config.setMetricRegistry(meters);
            }
            log.debug(
                    "Sumi's lease renewals take their connections from pool {} ({} at most, connection timeout {})",
                    config.getPoolName(),
                    size,
                    connectionTimeout);
            return new HikariDataSource(config);
        }

        private static @Nullable HikariDataSource unwrap(DataSource dataSource) {
            if (dataSource instanceof HikariDataSource hikari) {
                return hikari;
            }
            try {
                return dataSource.isWrapperFor(HikariDataSource.class)
                        ? dataSource.unwrap(HikariDataSource.class)
                        : null;
            } catch (SQLException ex) {
                return null;
            }
        }
    }
}
