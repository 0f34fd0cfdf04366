package io.sumi.consumer;

import com.zaxxer.hikari.HikariConfig;
import com.zaxxer.hikari.HikariDataSource;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.time.Duration;
import java.util.Map;

/**
 * The "renewing JVM" of {@link LeaseRenewalSeparateJvmIntegrationTests}: a process of its own that
 * claims one key in lease mode and runs a handler that never returns, renewing its lease, until it
 * is killed. Arguments: the database ({@link TestDatabase} name), the consumer, the key, the lease
 * in milliseconds.
 */
public final class RenewingJvm {

    private RenewingJvm() {}

    public static void main(String[] args) throws Exception {
        TestDatabase database = TestDatabase.valueOf(args[0]);
        String[] settings = database.settings();
        HikariConfig config = new HikariConfig();
        config.setJdbcUrl(settings[0]);
        config.setUsername(settings[1]);
        config.setPassword(settings[2]);
        config.setMaximumPoolSize(2);
        HikariDataSource pool = new HikariDataSource(config);
        IdempotentExecutor executor = IdempotentExecutor.builder(
                        JdbcProcessedMessageStore.builder(pool).build())
                .build();
        HandlerDefinition handler = HandlerDefinition.builder(args[1])
                .mode(IdempotencyMode.LEASE)
                .lease(Duration.ofMillis(Long.parseLong(args[3])))
                .build();
        executor.execute(
                handler,
                InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, args[2])),
                () -> {
                    System.out.println("RUNNING");
                    System.out.flush();
                    Thread.sleep(Long.MAX_VALUE); // until kill -9
                    return null;
                });
    }
}
