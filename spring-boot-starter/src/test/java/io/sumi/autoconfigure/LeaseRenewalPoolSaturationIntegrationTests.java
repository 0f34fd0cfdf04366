package io.sumi.autoconfigure;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.consumer.HandlerDefinition;
import io.sumi.consumer.HandlerResult;
import io.sumi.consumer.IdempotencyMode;
import io.sumi.consumer.IdempotentExecutor;
import io.sumi.consumer.InboundMessage;
import io.sumi.consumer.MessageOutcome;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.sql.Connection;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;
import org.springframework.boot.autoconfigure.AutoConfigurations;
import org.springframework.boot.flyway.autoconfigure.FlywayAutoConfiguration;
import org.springframework.boot.jdbc.autoconfigure.DataSourceAutoConfiguration;
import org.springframework.boot.test.context.runner.ApplicationContextRunner;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * Issue 19 A14: lease renewal must not wait behind the application's work for a connection. An
 * application as the starter wires it (Boot's HikariCP pool, here of 2 connections, whose
 * connection timeout is longer than the lease, as Hikari's 30 s default is not shorter than Sumi's
 * 30 s default lease) runs a lease-mode handler for several leases while other work of the
 * application holds every connection of that pool (two threads parked on a latch, each holding a
 * connection). Another instance (a store on a pool of its own) keeps trying to claim the key.
 *
 * <p>Before the fix the renewals queued for the saturated pool, the lease lapsed, and the other
 * instance took the key over while the first handler still ran. With the starter's renewal pool
 * (a small HikariCP pool of its own, configured from the application's) the renewals go on and
 * the other instance is told BUSY until the handler completes.
 */
class LeaseRenewalPoolSaturationIntegrationTests {

    static final Duration LEASE = Duration.ofSeconds(1);

    private final ExecutorService threads = Executors.newCachedThreadPool();
    private final CountDownLatch releaseConnections = new CountDownLatch(1);
    private final CountDownLatch finishHandler = new CountDownLatch(1);

    @Configuration(proxyBeanMethods = false)
    static class Meters {
        @Bean
        MeterRegistry meterRegistry() {
            return new SimpleMeterRegistry();
        }
    }

    @AfterEach
    void tearDown() {
        releaseConnections.countDown();
        finishHandler.countDown();
        threads.shutdownNow();
    }

    private static ApplicationContextRunner application(TestDatabase database) {
        String[] settings = database.settings();
        return new ApplicationContextRunner()
                .withPropertyValues(
                        "spring.datasource.url=" + settings[0],
                        "spring.datasource.username=" + settings[1],
                        "spring.datasource.password=" + settings[2],
                        "spring.datasource.hikari.maximum-pool-size=2",
                        // Longer than the lease, as Hikari's default (30 s) is not shorter than Sumi's (30 s).
                        "spring.datasource.hikari.connection-timeout="
                                + LEASE.multipliedBy(8).toMillis(),
                        "spring.flyway.locations=classpath:db/sumi/{vendor}",
                        "sumi.consumer.lease=" + LEASE.toMillis() + "ms",
                        // The default for a 1 s lease is 250 ms; a loaded CI machine can take longer to connect.
                        "sumi.consumer.renewal-pool.connection-timeout=500ms")
                .withConfiguration(AutoConfigurations.of(
                        DataSourceAutoConfiguration.class, FlywayAutoConfiguration.class, SumiAutoConfiguration.class))
                .withUserConfiguration(Meters.class);
    }

    @ParameterizedTest(name = "{0}")
    @EnumSource(
            value = TestDatabase.class,
            names = {"POSTGRESQL", "MARIADB"})
    void aLongHandlerKeepsItsLeaseWhileTheApplicationsPoolIsSaturated(TestDatabase database) {
        String consumer = "renewal-pool-" + UUID.randomUUID();
        // The other instance: a store on a pool of its own.
        JdbcProcessedMessageStore otherInstance =
                JdbcProcessedMessageStore.builder(database.dataSource()).build();
        try {
            application(database).run(context -> {
                IdempotentExecutor executor = context.getBean(IdempotentExecutor.class);
                DataSource applicationPool = context.getBean(DataSource.class);
                HandlerDefinition handler = HandlerDefinition.builder(consumer)
                        .mode(IdempotencyMode.LEASE)
                        .lease(LEASE)
                        .build();

                CountDownLatch running = new CountDownLatch(1);
                Future<HandlerResult<Object>> longHandler =
                        threads.submit(() -> executor.execute(handler, message("k"), () -> {
                            running.countDown();
                            assertThat(finishHandler.await(60, TimeUnit.SECONDS))
                                    .isTrue();
                            return "done";
                        }));
                assertThat(running.await(20, TimeUnit.SECONDS)).isTrue();

                // The application's other work takes every connection of its pool and keeps them.
                CountDownLatch holding = new CountDownLatch(2);
                List<Future<?>> hogs = new ArrayList<>();
                for (int i = 0; i < 2; i++) {
                    hogs.add(threads.submit(() -> {
                        try (Connection held = applicationPool.getConnection()) {
                            holding.countDown();
                            assertThat(releaseConnections.await(60, TimeUnit.SECONDS))
                                    .isTrue();
                        }
                        return null;
                    }));
                }
                assertThat(holding.await(20, TimeUnit.SECONDS)).isTrue();

                // Four leases with the pool saturated: the other instance never gets the key.
                AtomicReference<ClaimOutcome> lastSeen = new AtomicReference<>();
                await().during(LEASE.multipliedBy(4))
                        .atMost(LEASE.multipliedBy(6))
                        .pollInterval(Duration.ofMillis(50))
                        .until(() -> {
                            ClaimOutcome outcome = otherInstance
                                    .claim(consumer, new ClaimRequest("k", null), LEASE)
                                    .outcome();
                            if (lastSeen.get() != ClaimOutcome.CLAIMED) {
                                lastSeen.set(outcome);
                            }
                            return lastSeen.get() == ClaimOutcome.BUSY;
                        });

                releaseConnections.countDown();
                for (Future<?> hog : hogs) {
                    hog.get(20, TimeUnit.SECONDS);
                }
                finishHandler.countDown();
                assertThat(longHandler.get(20, TimeUnit.SECONDS).outcome()).isEqualTo(MessageOutcome.PROCESSED);
                ProcessedMessage row = otherInstance.find(consumer, "k").orElseThrow();
                assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
                assertThat(row.attempts()).as("never taken over").isEqualTo(1);
                assertThat(renewals(context.getBean(MeterRegistry.class), consumer, "renewed"))
                        .as("renewed while the pool was saturated")
                        .isGreaterThanOrEqualTo(4);
            });
        } finally {
            new JdbcTemplate(database.dataSource())
                    .update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
        }
    }

    private static double renewals(MeterRegistry meters, String consumer, String result) {
        Counter counter = meters.find("sumi.leases.renewals")
                .tag("consumer", consumer)
                .tag("result", result)
                .counter();
        return counter == null ? 0 : counter.count();
    }

    private static InboundMessage message(String key) {
        return InboundMessage.of("payload", Map.of(HandlerDefinition.IDEMPOTENCY_KEY_HEADER, key));
    }
}
