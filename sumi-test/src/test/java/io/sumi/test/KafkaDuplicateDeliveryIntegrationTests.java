package io.sumi.test;

import static io.sumi.test.SumiAssertions.assertThatSumi;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.sumi.store.MessageStatus;
import java.time.Duration;
import java.util.UUID;
import org.junit.jupiter.api.Test;
import org.springframework.beans.factory.annotation.Autowired;
import org.springframework.boot.test.context.SpringBootTest;
import org.springframework.kafka.test.context.EmbeddedKafka;

/**
 * Each assertion of the kit on the in-process broker: it passes for a listener with
 * {@code @IdempotentHandler} and fails for the same listener without it (the negative control),
 * or for the failure it is about (a claim left by a crash, a dead-lettered record).
 */
@SpringBootTest(
        classes = KitTestApplication.class,
        properties = {})
@EmbeddedKafka(
        partitions = 3,
        topics = {"kit.idempotent", "kit.plain", "kit.idempotent-dlt", "kit.plain-dlt"},
        bootstrapServersProperty = "spring.kafka.bootstrap-servers")
class KafkaDuplicateDeliveryIntegrationTests {

    @Autowired
    SumiTest sumi;

    @Autowired
    KitTestApplication.Mailbox mailbox;

    static String key() {
        return "key-" + UUID.randomUUID();
    }

    @Test
    void concurrentCopiesOnDifferentPartitionsAreProcessedOnceByAnIdempotentListener() {
        String key = key();

        sumi.kafka()
                .send("kit.idempotent", key, "hello")
                .times(3)
                .concurrently()
                .acrossPartitions()
                .andAwait();

        assertThat(mailbox.sent("kit-idempotent", key)).isEqualTo(1);
        assertThatSumi()
                .consumer("kit-idempotent")
                .isGuardedBySumi()
                .processedOnce(key)
                .ranHandler(key, 1)
                .hasOutcome(key, DeliveryOutcome.PROCESSED, 1)
                .hasOutcome(DeliveryOutcome.DUPLICATE, 2)
                .hasNoClaimInProgress()
                .hasNothingDeadLettered();
    }

    @Test
    void everyAssertionFailsForTheSameListenerWithoutSumi() {
        String key = key();

        sumi.kafka()
                .send("kit.plain", key, "hello")
                .times(3)
                .concurrently()
                .acrossPartitions()
                .andAwait();

        // The negative control: the listener really mailed three times ...
        assertThat(mailbox.sent("kit-plain", key)).isEqualTo(3);
        ConsumerAssert plain = assertThatSumi().consumer("kit-plain");
        // ... and each assertion about idempotency says so.
        assertThatThrownBy(() -> plain.processedOnce(key))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran 3 times")
                .hasMessageContaining("not guarded by Sumi");
        assertThatThrownBy(() -> plain.ranHandler(key, 1)).isInstanceOf(AssertionError.class);
        assertThatThrownBy(() -> plain.hasOutcome(DeliveryOutcome.DUPLICATE, 2))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("but it had 0");
        assertThatThrownBy(() -> plain.hasOutcome(key, DeliveryOutcome.PROCESSED, 1))
                .isInstanceOf(AssertionError.class);
        assertThatThrownBy(plain::hasNoClaimInProgress)
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("no @IdempotentHandler");
        assertThatThrownBy(plain::isGuardedBySumi).isInstanceOf(AssertionError.class);
        // What is true of it still passes.
        plain.ranHandler(key, 3).hasOutcome(DeliveryOutcome.PROCESSED, 3).hasNothingDeadLettered();
    }

    @Test
    void sequentialCopiesOnTheKeysPartitionAreProcessedOnce() {
        String key = key();

        sumi.kafka().send("kit.idempotent", key, "hello").times(4).andAwait();

        assertThatSumi()
                .consumer("kit-idempotent")
                .processedOnce(key)
                .hasOutcome(key, DeliveryOutcome.DUPLICATE, 3)
                .hasOutcome(DeliveryOutcome.BUSY, 0);
    }

    @Test
    void hasNothingDeadLetteredFailsWhenAListenerDeadLetters() {
        String guarded = key();
        String plain = key();

        sumi.kafka().send("kit.idempotent", guarded, "poison").andAwait();
        sumi.kafka().send("kit.plain", plain, "poison").andAwait();

        assertThatThrownBy(() -> assertThatSumi().consumer("kit-idempotent").hasNothingDeadLettered())
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("1 records of the test are in the dead-letter topic");
        assertThatThrownBy(() -> assertThatSumi().consumer("kit-plain").hasNothingDeadLettered())
                .isInstanceOf(AssertionError.class);
        // Retried (2 retries; a rebalance may add attempts), then dead-lettered; never processed.
        assertThatSumi()
                .consumer("kit-idempotent")
                .hasDeadLettered(1)
                .ranHandler(guarded, 0)
                .hasOutcome(guarded, DeliveryOutcome.PROCESSED, 0);
        assertThatSumi().consumer("kit-plain").hasDeadLettered(1);
    }

    @Test
    void aCrashBetweenTheEffectAndCompletedRunsTheHandlerAgainAfterTheLease() {
        String key = key();
        sumi.crashes().crashNextCompletions("kit-idempotent", 1);

        KafkaDuplicates.Sent sent =
                sumi.kafka().send("kit.idempotent", key, "hello").send();

        // Just after the crash the claim is left in progress: the assertion about it fails.
        await().atMost(Duration.ofSeconds(20)).until(() -> sumi.crashes().crashes("kit-idempotent") == 1);
        assertThat(sumi.ledgerRow("kit-idempotent", key))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.IN_PROGRESS);
        assertThatThrownBy(() -> assertThatSumi().consumer("kit-idempotent").hasNoClaimInProgress())
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining(key);

        // After the lease (3 s) the redelivery takes the claim over and runs the handler again.
        sent.awaitSettled();
        assertThat(mailbox.sent("kit-idempotent", key)).isEqualTo(2);
        assertThatSumi()
                .consumer("kit-idempotent")
                .ranHandler(key, 2)
                .hasNoClaimInProgress()
                .hasNothingDeadLettered();
        assertThatThrownBy(() -> assertThatSumi().consumer("kit-idempotent").processedOnce(key))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("ran 2 times");
    }

    @Test
    void anUnknownConsumerIsReported() {
        assertThatThrownBy(() -> assertThatSumi().consumer("nobody").processedOnce("k"))
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("saw none");
    }
}
