package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.store.MessageStatus;
import io.sumi.store.ProcessedMessage;
import io.sumi.store.jdbc.JdbcProcessedMessageStore;
import io.sumi.testing.TestDatabase;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The renewing JVM is a real process ({@link RenewingJvm}) killed with {@code kill -9}
 * ({@link Process#destroyForcibly()}): while it lives, its handler runs past several leases and
 * this JVM's deliveries of the key are {@code BUSY}; once it is killed, this JVM takes the message
 * over within about one lease. PostgreSQL and MariaDB only (an in-memory H2 is not shared between
 * processes).
 */
@ParameterizedClass
@EnumSource(
        value = TestDatabase.class,
        names = {"POSTGRESQL", "MARIADB"})
class LeaseRenewalSeparateJvmIntegrationTests {

    static final Duration LEASE = Duration.ofSeconds(1);

    private static final Logger log = LoggerFactory.getLogger(LeaseRenewalSeparateJvmIntegrationTests.class);

    private final String consumer = "renewal-jvm-" + UUID.randomUUID();
    private Process process;

    /** The database, the class's parameter: each test runs on every database the source above names. */
    @Parameter
    TestDatabase database;

    @AfterEach
    void tearDown() throws Exception {
        if (process != null) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        new JdbcTemplate(database.dataSource()).update("DELETE FROM processed_messages WHERE consumer = ?", consumer);
    }

    @Test
    void aKilledRenewingProcessIsTakenOverAfterOneLease() throws Exception {
        JdbcProcessedMessageStore store =
                JdbcProcessedMessageStore.builder(database.dataSource()).build();
        IdempotentExecutor executor = IdempotentExecutor.builder(store).build();
        HandlerDefinition handler = HandlerDefinition.builder(consumer)
                .mode(IdempotencyMode.LEASE)
                .lease(LEASE)
                .build();
        Path output = Files.createTempFile("renewing-jvm", ".log");
        String classpath = System.getProperty("surefire.test.class.path", System.getProperty("java.class.path"));
        process = new ProcessBuilder(
                        Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                        "-Xmx128m",
                        "-XX:TieredStopAtLevel=1",
                        "-cp",
                        classpath,
                        RenewingJvm.class.getName(),
                        database.name(),
                        consumer,
                        "k1",
                        String.valueOf(LEASE.toMillis()))
                .redirectErrorStream(true)
                .redirectOutput(output.toFile())
                .start();
        try {
            await().atMost(Duration.ofSeconds(60))
                    .until(() -> Files.readString(output).contains("RUNNING") || !process.isAlive());
            assertThat(process.isAlive())
                    .as("the renewing JVM runs; its output: %s", output)
                    .isTrue();
            AtomicInteger busy = new AtomicInteger();
            AtomicInteger runs = new AtomicInteger();

            // Alive: its handler outlives three leases and the key stays BUSY here.
            await().during(LEASE.multipliedBy(3))
                    .atMost(LEASE.multipliedBy(20))
                    .pollInterval(Duration.ofMillis(100))
                    .until(() -> deliver(executor, handler, busy, runs) == 0);
            long killedAt = System.nanoTime();
            process.destroyForcibly();

            await().atMost(LEASE.multipliedBy(20))
                    .pollInterval(Duration.ofMillis(20))
                    .until(() -> deliver(executor, handler, busy, runs) == 1);
            long delay = TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt);
            log.info("{}: taken over {} ms after kill -9 of the renewing JVM (lease {})", database, delay, LEASE);

            assertThat(busy).hasValueGreaterThan(10);
            ProcessedMessage row = store.find(consumer, "k1").orElseThrow();
            assertThat(row.status()).isEqualTo(MessageStatus.COMPLETED);
            assertThat(row.attempts())
                    .as("claimed by the killed JVM, then taken over here")
                    .isEqualTo(2);
        } finally {
            Files.deleteIfExists(output);
        }
    }

    /** One delivery here: how many times this JVM's handler has run so far. */
    private static int deliver(
            IdempotentExecutor executor, HandlerDefinition handler, AtomicInteger busy, AtomicInteger runs)
            throws Exception {
        try {
            executor.execute(handler, H2ExecutorTestSupport.message("k1"), runs::incrementAndGet);
        } catch (MessageBusyException ex) {
            busy.incrementAndGet();
        }
        return runs.get();
    }
}
