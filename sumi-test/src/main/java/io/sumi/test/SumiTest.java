package io.sumi.test;

import io.sumi.store.ProcessedMessage;
import io.sumi.store.ProcessedMessageStore;
import java.time.Duration;
import java.time.Instant;
import java.util.Optional;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;

/**
 * The kit's entry point in a Spring test: what the consumers did ({@link SumiAssertions}), duplicate
 * delivery in one line ({@link #kafka()}, {@link #stream()}), crashes ({@link #crashes()}).
 *
 * <p>Present in every {@code @SpringBootTest} whose classpath has {@code sumi-test} (the kit's
 * auto-configuration registers it; {@code sumi.test.enabled=false} turns it off): inject it, or
 * call {@link #current()} in a test method. Before each test method the kit forgets what it saw
 * and disarms crashes, so a test sees only its own deliveries. Tests of one context must not run
 * in parallel.
 */
public final class SumiTest {

    /** Default time {@code awaitSettled} waits. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofSeconds(30);

    private static volatile @Nullable SumiTest current;

    private final DeliveryLog log;
    private final CrashInjector crashes;
    private final Supplier<@Nullable ProcessedMessageStore> ledger;
    private final @Nullable KafkaDuplicates kafka;
    private final @Nullable StreamDuplicates stream;
    private volatile Instant testStart = Instant.now();

    /** Built by the kit's auto-configuration. */
    SumiTest(
            DeliveryLog log,
            CrashInjector crashes,
            Supplier<@Nullable ProcessedMessageStore> ledger,
            @Nullable KafkaDuplicates kafka,
            @Nullable StreamDuplicates stream) {
        this.log = log;
        this.crashes = crashes;
        this.ledger = ledger;
        this.kafka = kafka;
        this.stream = stream;
        if (kafka != null) {
            kafka.attach(this);
        }
        if (stream != null) {
            stream.attach(this);
        }
    }

    /**
     * The kit of the running test's application context.
     *
     * @throws IllegalStateException outside a Spring test method, or when the context has no kit
     */
    public static SumiTest current() {
        SumiTest sumi = current;
        if (sumi == null) {
            throw new IllegalStateException(
                    "No Sumi test kit for this test: SumiTest.current() and assertThatSumi() work in"
                            + " the test methods of a Spring test (@SpringBootTest) whose classpath has io.sumi:sumi-test"
                            + " (and sumi.test.enabled is not false)");
        }
        return sumi;
    }

    /**
     * Makes {@code sumi} the current kit. Only the kit's test execution listener calls it (before
     * and after each test method), so it is not part of the API.
     */
    static void setCurrent(@Nullable SumiTest sumi) {
        current = sumi;
    }

    /** Forgets every delivery seen and disarms every crash: a new test begins. */
    public void reset() {
        log.reset();
        crashes.reset();
        testStart = Instant.now();
    }

    /** Duplicate delivery on Kafka (the in-process broker of {@code @EmbeddedKafka}, or any the application uses). */
    public KafkaDuplicates kafka() {
        if (kafka == null) {
            throw new IllegalStateException(
                    "No Kafka in this context: sumi.kafka() needs spring-kafka and a KafkaAdmin bean"
                            + " (Spring Boot's Kafka auto-configuration)");
        }
        return kafka;
    }

    /** Duplicate delivery through Spring Cloud Stream's test binder. */
    public StreamDuplicates stream() {
        if (stream == null) {
            throw new IllegalStateException("No Spring Cloud Stream test binder in this context: sumi.stream() needs"
                    + " org.springframework.cloud:spring-cloud-stream-test-binder on the test classpath");
        }
        return stream;
    }

    /** Crash injection for lease mode. */
    public CrashInjector crashes() {
        return crashes;
    }

    /** The ledger's row of {@code key} in {@code consumer}'s namespace. */
    public Optional<ProcessedMessage> ledgerRow(String consumer, String key) {
        ProcessedMessageStore store = ledger.get();
        return store == null ? Optional.empty() : store.find(consumer, key);
    }

    /** When the current test began (deliveries before it are not counted). */
    public Instant testStart() {
        return testStart;
    }

    /**
     * How many deliveries of {@code key} to {@code consumer} (its ledger namespace, or its listener's
     * consumer group or function name) since the test began ended without an exception, i.e. were
     * acknowledged; 0 if the kit saw none. For waiting until copies sent some other way than
     * {@link #kafka()} or {@link #stream()} (an outbox dispatch) are settled.
     */
    public int acknowledged(String consumer, String key) {
        DeliveryLog.ConsumerStats stats = log.find(consumer);
        return stats == null ? 0 : stats.key(key).acknowledged();
    }

    /** What the kit saw. */
    DeliveryLog log() {
        return log;
    }

    /** Records {@code consumer}'s listeners dead-lettered for {@code key} since the test began; -1 if this kit cannot tell. */
    int deadLettered(java.util.Set<String> listeners, @Nullable String key) {
        return kafka == null ? -1 : kafka.deadLettered(listeners, key);
    }
}
