package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.slf4j.LoggerFactory;

/**
 * Regression (issue 19, A13): a rerun against a ledger left by an earlier run answered every key
 * DUPLICATE, the handlers never ran, and nothing was logged at any level. Each skipped duplicate is
 * logged at DEBUG on {@code io.sumi.consumer.duplicates} (consumer, key, when it completed), and a
 * consumer whose first 100 messages are all duplicates says so once at INFO.
 */
class SkippedDuplicateLoggingTests extends H2ExecutorTestSupport {

    static final String LOGGER = "io.sumi.consumer.duplicates";

    final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    Logger logger;

    @BeforeEach
    void captureTheDuplicatesLogger() {
        logger = (Logger) LoggerFactory.getLogger(LOGGER);
        logger.setLevel(Level.DEBUG);
        appender.start();
        logger.addAppender(appender);
    }

    @AfterEach
    void releaseTheDuplicatesLogger() {
        logger.detachAppender(appender);
        logger.setLevel(null);
    }

    List<String> lines(Level level) {
        return appender.list.stream()
                .filter(event -> event.getLevel() == level)
                .map(ILoggingEvent::getFormattedMessage)
                .toList();
    }

    @Test
    void aSkippedDuplicateIsLoggedAtDebugWithItsConsumerKeyAndCompletionTime() throws Exception {
        executor.execute(lease(), message("order-1"), () -> "first");
        Instant completedAt = row("order-1").orElseThrow().processedAt();
        AtomicInteger ran = new AtomicInteger();

        executor.execute(lease(), message("order-1"), ran::incrementAndGet);
        executor.execute(transactional(), message("order-1"), ran::incrementAndGet);

        assertThat(ran).hasValue(0);
        assertThat(lines(Level.DEBUG))
                .hasSize(2)
                .allSatisfy(line -> assertThat(line)
                        .contains("consumer '" + consumer + "'")
                        .contains("key 'order-1'")
                        .contains("completed at " + completedAt));
    }

    @Test
    void theDuplicatesOfABatchAreLoggedOneByOne() throws Exception {
        executor.execute(lease(), message("b"), () -> null);
        executor.execute(lease(), message("d"), () -> null);
        List<InboundMessage> batch = new ArrayList<>();
        for (String key : List.of("a", "b", "a", "d")) {
            batch.add(message(key));
        }

        BatchResult lease = executor.executeBatch(lease(), batch, indexes -> {});
        assertThat(lease).isEqualTo(new BatchResult(1, 3));
        assertThat(lines(Level.DEBUG))
                .hasSize(3)
                .anySatisfy(line -> assertThat(line).contains("key 'b' was completed at"))
                .anySatisfy(line -> assertThat(line).contains("key 'a' is repeated in the batch"))
                .anySatisfy(line -> assertThat(line).contains("key 'd' was completed at"));

        appender.list.clear();
        BatchResult transactional = executor.executeBatch(transactional(), batch, indexes -> {});
        assertThat(transactional).isEqualTo(new BatchResult(0, 4));
        assertThat(lines(Level.DEBUG))
                .hasSize(4)
                .allSatisfy(line -> assertThat(line).contains("was completed at"));
    }

    @Test
    void aConsumerWhoseFirstHundredMessagesAreAllDuplicatesSaysSoOnceAtInfo() throws Exception {
        logger.setLevel(Level.INFO); // DEBUG off: the notice is what a default configuration shows
        for (int i = 0; i < 150; i++) {
            executor.execute(lease(), message("old-" + i), () -> null);
        }
        assertThat(lines(Level.INFO)).as("a consumer that ran its handler").isEmpty();

        // A new executor, as a rerun against the ledger the first run left.
        IdempotentExecutor rerun =
                IdempotentExecutor.builder(counting).meterRegistry(meters).build();
        AtomicInteger ran = new AtomicInteger();
        for (int i = 0; i < 150; i++) {
            rerun.execute(lease(), message("old-" + i), ran::incrementAndGet);
        }

        assertThat(ran).hasValue(0);
        assertThat(lines(Level.DEBUG)).isEmpty();
        assertThat(lines(Level.INFO))
                .singleElement()
                .satisfies(line -> assertThat(line)
                        .contains("Consumer '" + consumer + "'")
                        .contains("first 100 messages were all duplicates")
                        .contains("logging.level.io.sumi.consumer.duplicates=DEBUG"));
    }
}
