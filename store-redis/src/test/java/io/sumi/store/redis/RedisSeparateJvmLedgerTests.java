package io.sumi.store.redis;

import static org.assertj.core.api.Assertions.assertThat;
import static org.awaitility.Awaitility.await;

import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.testing.RedisClusterExtension;
import io.sumi.testing.RedisClusterFixture;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.UUID;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;
import org.junit.jupiter.params.Parameter;
import org.junit.jupiter.params.ParameterizedClass;
import org.junit.jupiter.params.provider.EnumSource;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.data.redis.connection.RedisConnection;
import org.springframework.data.redis.connection.RedisConnectionFactory;
import org.springframework.data.redis.connection.RedisStringCommands.SetOption;
import org.springframework.data.redis.core.types.Expiration;

/**
 * The Redis ledger shared by separate JVMs ({@link RedisLedgerJvm}, started with this JVM's class
 * path), on the standalone server and on the tests' 3-master cluster: claims raced from two other
 * JVMs and this one each claim every id exactly once, and a claim held by a JVM that is killed
 * ({@code kill -9}) is {@code BUSY} here while it lives and taken over once its lease, timed by the
 * server's clock, has run out.
 */
@ParameterizedClass(name = "{0}")
@EnumSource(RedisTarget.class)
@ExtendWith(RedisClusterExtension.class)
class RedisSeparateJvmLedgerTests {

    private static final Logger log = LoggerFactory.getLogger(RedisSeparateJvmLedgerTests.class);
    private static final int IDS = 1_000;
    /** Long enough that this JVM's first claim falls inside it on a loaded machine. */
    private static final Duration HOLDER_LEASE = Duration.ofSeconds(5);

    private static RedisClusterFixture cluster;

    @BeforeAll
    static void cluster(RedisClusterFixture fixture) {
        cluster = fixture;
    }

    @Parameter
    RedisTarget target;

    private final String consumer = "jvm-" + UUID.randomUUID();
    private final List<Process> processes = new ArrayList<>();
    private final List<Path> outputs = new ArrayList<>();

    @AfterEach
    void tearDown() throws Exception {
        for (Process process : processes) {
            process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        }
        for (Path output : outputs) {
            Files.deleteIfExists(output);
        }
        TestRedis.deleteRows(redis(), TestRedis.PREFIX, consumer);
    }

    private RedisConnectionFactory redis() {
        return target.connectionFactory(cluster);
    }

    private RedisProcessedMessageStore store() {
        return RedisProcessedMessageStore.builder(redis())
                .prefix(TestRedis.PREFIX)
                .build();
    }

    @Test
    void claimsRacedFromThreeJvmsClaimEachIdExactlyOnce() throws Exception {
        String goKey = "sumi-test:go:" + UUID.randomUUID();
        Path first = start("race", consumer, Integer.toString(IDS), "1", goKey);
        Path second = start("race", consumer, Integer.toString(IDS), "2", goKey);
        awaitLine(first, "READY");
        awaitLine(second, "READY");

        RedisProcessedMessageStore store = store();
        List<Integer> order = IntStream.range(0, IDS).boxed().collect(Collectors.toList());
        Collections.shuffle(order, new Random(3));
        CountDownLatch go = new CountDownLatch(1);
        CompletableFuture<List<String>> here = CompletableFuture.supplyAsync(() -> {
            awaitQuietly(go);
            List<String> claimed = new ArrayList<>();
            for (int id : order) {
                ClaimResult result = store.claim(consumer, new ClaimRequest("m-" + id, null), Duration.ofMinutes(5));
                if (result.outcome() == ClaimOutcome.CLAIMED) {
                    claimed.add("m-" + id);
                    store.complete(result.message());
                }
            }
            return claimed;
        });
        // The other JVMs poll for the key; this JVM's thread waits on the latch: all start together.
        try (RedisConnection connection = redis().getConnection()) {
            connection
                    .stringCommands()
                    .set(
                            goKey.getBytes(StandardCharsets.UTF_8),
                            new byte[] {1},
                            Expiration.seconds(120),
                            SetOption.upsert());
        }
        go.countDown();

        List<String> claimed = new ArrayList<>(here.get(2, TimeUnit.MINUTES));
        for (Path output : List.of(first, second)) {
            awaitLine(output, "DONE");
            for (String line : Files.readAllLines(output)) {
                if (line.startsWith("CLAIMED ")) {
                    claimed.add(line.substring("CLAIMED ".length()));
                }
            }
        }
        Map<String, Long> claimsPerId =
                claimed.stream().collect(Collectors.groupingBy(Function.identity(), Collectors.counting()));
        assertThat(claimsPerId).as("ids claimed by any JVM").hasSize(IDS);
        assertThat(claimsPerId)
                .allSatisfy((id, claims) ->
                        assertThat(claims).as("claims of %s", id).isEqualTo(1L));
        assertThat(store.find(consumer, "m-0").orElseThrow().status()).isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aClaimOfAKilledJvmIsBusyWhileItLivesAndTakenOverAfterItsLease() throws Exception {
        Path holder = start("hold", consumer, "k1", Long.toString(HOLDER_LEASE.toMillis()));
        awaitLine(holder, "HELD CLAIMED 1");
        RedisProcessedMessageStore store = store();
        ClaimRequest request = new ClaimRequest("k1", null);

        assertThat(store.claim(consumer, request, Duration.ofMinutes(5)).outcome())
                .as("the other JVM holds a live lease")
                .isEqualTo(ClaimOutcome.BUSY);

        long killedAt = System.nanoTime();
        processes.get(0).destroyForcibly().waitFor(10, TimeUnit.SECONDS);
        ClaimResult[] takenOver = new ClaimResult[1];
        await().atMost(HOLDER_LEASE.multipliedBy(10))
                .pollInterval(Duration.ofMillis(20))
                .until(() -> {
                    ClaimResult result = store.claim(consumer, request, Duration.ofMinutes(5));
                    takenOver[0] = result;
                    return result.outcome() != ClaimOutcome.BUSY;
                });
        log.info(
                "{}: taken over {} ms after kill -9 of the holding JVM (its lease {})",
                target,
                TimeUnit.NANOSECONDS.toMillis(System.nanoTime() - killedAt),
                HOLDER_LEASE);

        assertThat(takenOver[0].outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        assertThat(takenOver[0].message().attempts())
                .as("claimed by the killed JVM, then taken over here")
                .isEqualTo(2);
        store.complete(takenOver[0].message());
        assertThat(store.claim(consumer, request, Duration.ofMinutes(5)).outcome())
                .isEqualTo(ClaimOutcome.DUPLICATE);
    }

    /** Starts {@link RedisLedgerJvm} with {@code mode} on this test's target; its output file. */
    private Path start(String mode, String... args) throws IOException {
        Path output = Files.createTempFile("redis-ledger-jvm", ".log");
        outputs.add(output);
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx128m",
                "-XX:TieredStopAtLevel=1",
                "-cp",
                System.getProperty("surefire.test.class.path", System.getProperty("java.class.path")),
                RedisLedgerJvm.class.getName(),
                mode,
                target.name()));
        command.addAll(List.of(args));
        processes.add(new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(output.toFile())
                .start());
        return output;
    }

    private static void awaitLine(Path output, String line) {
        await().atMost(Duration.ofSeconds(90))
                .pollInterval(Duration.ofMillis(50))
                .failFast(
                        "the other JVM wrote an exception: " + output,
                        () -> Files.readString(output).contains("Exception in thread"))
                .until(() -> Files.readAllLines(output).contains(line));
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException(ex);
        }
    }
}
