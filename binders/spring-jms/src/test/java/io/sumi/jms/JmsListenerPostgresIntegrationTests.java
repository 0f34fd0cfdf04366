package io.sumi.jms;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;
import static org.awaitility.Awaitility.await;

import io.github.resilience4j.circuitbreaker.CircuitBreaker;
import io.sumi.budget.Budget;
import io.sumi.budget.BudgetRegistry;
import io.sumi.consumer.exception.FingerprintMismatchException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.store.ClaimOutcome;
import io.sumi.store.ClaimRequest;
import io.sumi.store.ClaimResult;
import io.sumi.store.MessageStatus;
import io.sumi.testing.TestDatabase;
import jakarta.jms.BytesMessage;
import jakarta.jms.JMSException;
import jakarta.jms.Message;
import jakarta.jms.TextMessage;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.Collections;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;

/**
 * The JMS binder's broker-side behaviour with the ledger on PostgreSQL: parameter styles, poison
 * messages and missing keys to the dead-letter queues, busy keys held (not redelivered), budget
 * stops, client acknowledgement, key passthrough; and the tests of every database.
 */
class JmsListenerPostgresIntegrationTests extends AbstractJmsListenerIntegrationTests {

    @Override
    TestDatabase database() {
        return TestDatabase.POSTGRESQL;
    }

    @Override
    int brokerId() {
        return 1;
    }

    /** The next message of {@code queue} whose {@code test_id} property is {@code testId}, or null. */
    @Nullable
    Message receive(String queue, String testId) {
        return sender.receiveSelected(queue, "test_id = '" + testId + "'");
    }

    void sendTagged(String queue, @Nullable String key, String testId, String payload) {
        sender.send(queue, session -> {
            TextMessage message = session.createTextMessage(payload);
            if (key != null) {
                message.setStringProperty("outbox_id", key);
            }
            message.setStringProperty("test_id", testId);
            return message;
        });
    }

    int queueDepth(String queue) {
        Integer depth = sender.browse(
                queue,
                (session, browser) -> Collections.list(browser.getEnumeration()).size());
        return depth == null ? 0 : depth;
    }

    @Test
    void everyParameterStyleFindsTheKeyWhateverItsPropertySpelling() throws Exception {
        String key = run + "-style";
        for (int copy = 0; copy < 2; copy++) {
            // A JMS client refuses "outbox-id"; a non-JMS producer (here Artemis core) may send it.
            broker.sendCore("style-dashed", "outbox-id", key, "dashed");
            send("style-jms", "outbox_id", key, "jms");
            send("style-messaging", "idempotency_key", key, "messaging");
            send("style-header", "outbox_id", key, "header");
            send("style-camel", "outbox_HYPHEN_id", key, "camel"); // Camel's JMS spelling
        }

        for (String consumer :
                new String[] {"style-jms", "style-messaging", "style-header", "style-camel", "style-dashed"}) {
            await().atMost(Duration.ofSeconds(30)).until(() -> count(consumer, "duplicate") == 1);
            assertThat(listeners.effects(consumer)).as(consumer).containsOnlyKeys(key);
            assertThat(listeners.effects(consumer).get(key).get()).as(consumer).isEqualTo(1);
        }
    }

    @Test
    void aKeyExpressionReadsTheMessagesProperties() {
        for (String step : new String[] {"paid", "paid", "shipped"}) {
            sender.send("spel", session -> {
                TextMessage message = session.createTextMessage("order");
                message.setStringProperty("order_id", run + "-o1");
                message.setStringProperty("step", step);
                return message;
            });
        }

        await().atMost(Duration.ofSeconds(30)).until(() -> count("spel", "duplicate") == 1);
        await().atMost(Duration.ofSeconds(10))
                .until(() -> listeners.effects("spel").size() == 2);
        assertThat(listeners.effects("spel")).containsOnlyKeys(run + "-o1:paid", run + "-o1:shipped");
        assertThat(listeners.effects("spel").values())
                .allSatisfy(n -> assertThat(n.get()).isEqualTo(1));
    }

    @Test
    void aBytesMessageIsFingerprintedByItsBytesAndAReusedKeyWithOtherBytesGoesToTheDeadLetterQueue()
            throws JMSException {
        String key = run + "-bytes";
        for (String body : new String[] {"original", "original", "tampered"}) {
            sender.send("bytes", session -> {
                BytesMessage message = session.createBytesMessage();
                message.writeBytes(body.getBytes(StandardCharsets.UTF_8));
                message.setStringProperty("outbox_id", key);
                message.setStringProperty("test_id", key + "-" + body);
                return message;
            });
        }

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30))
                .until(() -> (dead[0] = receive(AbstractJmsListenerIntegrationTests.Config.SUMI_DLQ, key + "-tampered"))
                        != null);
        assertThat(dead[0]).isInstanceOf(BytesMessage.class);
        assertThat(new String(dead[0].getBody(byte[].class), StandardCharsets.UTF_8))
                .isEqualTo("tampered");
        assertThat(dead[0].getStringProperty(SumiJmsMessageListener.DEAD_LETTER_EXCEPTION))
                .isEqualTo(FingerprintMismatchException.class.getName());
        await().atMost(Duration.ofSeconds(10)).until(() -> count("bytes", "duplicate") == 1);
        assertThat(listeners.effects("bytes")).containsOnlyKeys(key + "=original");
        assertThat(listeners.effects("bytes").get(key + "=original").get()).isEqualTo(1);
    }

    @Test
    void aPoisonMessageIsRedeliveredUpToTheBrokersLimitThenDeadLetteredByTheBroker() throws JMSException {
        String key = run + "-poison";
        sendTagged("poison", key, key, "poison payload");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = receive(EmbeddedArtemis.DLQ, key)) != null);
        assertThat(((TextMessage) dead[0]).getText()).isEqualTo("poison payload");
        assertThat(listeners.attempts("poison:" + key)).isEqualTo(EmbeddedArtemis.MAX_DELIVERY_ATTEMPTS);
        assertThat(store.find("Listeners.poison", key)).get().satisfies(row -> {
            assertThat(row.status()).isNotEqualTo(MessageStatus.COMPLETED);
            assertThat(row.lastError()).contains("poisoned payload");
        });
    }

    @Test
    void aMessageWithoutAKeyGoesToSumisDeadLetterQueueAtOnceWithTheReason() throws JMSException {
        String testId = run + "-nokey";
        sendTagged("nokey", null, testId, "no key here");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30))
                .until(() -> (dead[0] = receive(AbstractJmsListenerIntegrationTests.Config.SUMI_DLQ, testId)) != null);
        assertThat(((TextMessage) dead[0]).getText()).isEqualTo("no key here");
        assertThat(dead[0].getStringProperty(SumiJmsMessageListener.DEAD_LETTER_REASON))
                .contains("No idempotency key");
        assertThat(dead[0].getStringProperty(SumiJmsMessageListener.DEAD_LETTER_EXCEPTION))
                .isEqualTo(MissingIdempotencyKeyException.class.getName());
        assertThat(dead[0].getStringProperty(SumiJmsMessageListener.ORIGINAL_DESTINATION))
                .contains("nokey");
        assertThat(listeners.attempts("nokey:no key here")).isZero();
        assertThat(count("Listeners.noKey", "rejected"))
                .as("seen once, never redelivered")
                .isEqualTo(1);
        assertThat(receive(EmbeddedArtemis.DLQ, testId))
                .as("not also dead-lettered by the broker")
                .isNull();
    }

    @Test
    void withoutSumisDeadLetterQueueAMessageWithoutAKeyIsDeadLetteredByTheBrokersLimit() throws JMSException {
        // The other way to reject (and the control of the test above): rolled back until the broker gives up.
        String testId = run + "-nokey-broker";
        sendTagged("nokey-broker", null, testId, "no key either");

        Message[] dead = new Message[1];
        await().atMost(Duration.ofSeconds(30)).until(() -> (dead[0] = receive(EmbeddedArtemis.DLQ, testId)) != null);
        assertThat(((TextMessage) dead[0]).getText()).isEqualTo("no key either");
        assertThat(count("Listeners.noKeyBroker", "rejected")).isEqualTo(EmbeddedArtemis.MAX_DELIVERY_ATTEMPTS);
        assertThat(listeners.attempts("nokey-broker:no key either")).isZero();
    }

    @Test
    void aBusyKeyIsHeldByItsConsumerAndRunOnceTheHolderLetsGoWithoutABrokerRedelivery() {
        String key = run + "-busy";
        ClaimResult holder = store.claim("Listeners.busy", new ClaimRequest(key, null), Duration.ofSeconds(60));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        long startedAt = System.nanoTime();
        send("busy", key, "busy payload");

        await().atMost(Duration.ofSeconds(30)).until(() -> count("Listeners.busy", "busy") >= 3);
        assertThat(listeners.attempts("busy:" + key)).isZero();
        store.release(holder.message(), "the other consumer failed");

        await().atMost(Duration.ofSeconds(30)).until(() -> listeners.attempts("busy:" + key) == 1);
        double busy = count("Listeners.busy", "busy");
        // Not a hot loop: one retry per BUSY_INTERVAL at most.
        assertThat(busy).isBetween(3.0, 1.0 + (System.nanoTime() - startedAt) / (double) BUSY_INTERVAL.toNanos());
        assertThat(listeners.deliveryCount("busy:" + key))
                .as("held by its consumer, never redelivered by the broker")
                .isEqualTo(1);
        // The completion is written after the handler returns: wait for it rather than read it at once.
        await().atMost(Duration.ofSeconds(30))
                .until(() -> store.find("Listeners.busy", key)
                        .map(row -> row.status() == MessageStatus.COMPLETED)
                        .orElse(false));
    }

    @Test
    void withoutTheHoldABusyKeyIsRedeliveredByTheBrokerUntilItsLimitDeadLettersIt() {
        // Negative control of the busy hold: a container without Sumi's listener rolls a busy key back at once.
        String key = run + "-busy-nohold";
        ClaimResult holder = store.claim("Listeners.busyNoHold", new ClaimRequest(key, null), Duration.ofSeconds(60));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        sendTagged("busy-nohold", key, key, "busy payload");

        await().atMost(Duration.ofSeconds(30)).until(() -> receive(EmbeddedArtemis.DLQ, key) != null);
        assertThat(count("Listeners.busyNoHold", "busy")).isEqualTo(EmbeddedArtemis.MAX_DELIVERY_ATTEMPTS);
        assertThat(listeners.attempts("busy-nohold:" + key)).isZero();
        store.release(holder.message(), "done");
    }

    @Test
    void aBusyKeyWhoseHolderDiedIsHeldUntilTheHoldersLeaseEndsAlthoughBusyMaxWaitTimesTheBrokersLimitIsShorter() {
        // busy-max-wait (2 x 200 ms) x max-delivery-attempts (3) is far shorter than the dead holder's
        // lease: the hold must last until the database says the lease ended, then the key runs once.
        String key = run + "-busy-shorthold";
        ClaimResult holder = store.claim("Listeners.busyShortHold", new ClaimRequest(key, null), Duration.ofSeconds(5));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        sendTagged("busy-shorthold", key, key, "busy payload");

        await().atMost(Duration.ofSeconds(30))
                .until(() ->
                        listeners.attempts("busy-shorthold:" + key) == 1 || receive(EmbeddedArtemis.DLQ, key) != null);
        assertThat(listeners.attempts("busy-shorthold:" + key))
                .as("the held key ran once its holder's lease ended, not dead-lettered")
                .isEqualTo(1);
        assertThat(listeners.deliveryCount("busy-shorthold:" + key))
                .as("held by its consumer, never redelivered by the broker")
                .isEqualTo(1);
        assertThat(store.find("Listeners.busyShortHold", key))
                .get()
                .extracting(row -> row.status())
                .isEqualTo(MessageStatus.COMPLETED);
    }

    @Test
    void aBusyKeyOfAGuardedMethodTheListenerCallsRollsTheSessionBackInsteadOfBeingHeld() {
        // The listener's own work before the call is undone only by a rollback: no hold, no re-run in the session.
        String key = run + "-nested";
        ClaimResult holder = store.claim("window-effect", new ClaimRequest(key, null), Duration.ofSeconds(60));
        assertThat(holder.outcome()).isEqualTo(ClaimOutcome.CLAIMED);
        sendTagged("nested", key, key, "nested");

        await().atMost(Duration.ofSeconds(30)).until(() -> receive(EmbeddedArtemis.DLQ, key) != null);
        assertThat(listeners.attempts("nested:" + key)).isEqualTo(EmbeddedArtemis.MAX_DELIVERY_ATTEMPTS);
        store.release(holder.message(), "done");
    }

    @Test
    void aSpentBudgetStopsTheContainerHoldsTheMessageAndStartsAgainWhenTheBreakerHalfOpens() {
        JmsBudgetListenerStopper stopper = context.getBean(JmsBudgetListenerStopper.class);
        send("budget", run + "-boom-1", "boom-1");
        send("budget", run + "-boom-2", "boom-2");
        for (int i = 0; i < 4; i++) {
            send("budget", run + "-ok-" + i, "ok-" + i);
        }

        await().atMost(Duration.ofSeconds(60))
                .until(() -> listeners.effects("budget").size() == 6);
        assertThat(listeners.effects("budget"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(stopper.pauses("api")).isGreaterThanOrEqualTo(1);
        assertThat(stopper.resumes("api")).isEqualTo(stopper.pauses("api"));
        assertThat(listeners.deliveryCount("budget"))
                .as("a message is redelivered only for its handler's own failure, never for a budget stop")
                .isLessThanOrEqualTo(2);
    }

    @Test
    void withoutTheStopperARefusedMessageIsRolledBackUntilTheBrokersLimitDeadLettersIt() {
        // Negative control of the test above: the same budget trouble on a container without a stopper.
        Budget api2 = context.getBean(BudgetRegistry.class).budget("api2");
        for (int i = 0; i < 2; i++) {
            assertThatThrownBy(() -> api2.call(() -> {
                        throw new IllegalStateException("the paid API failed");
                    }))
                    .isInstanceOf(IllegalStateException.class);
        }
        assertThat(api2.circuitBreaker().getState()).isEqualTo(CircuitBreaker.State.OPEN);
        String testId = run + "-nostop-ok";
        sendTagged("budget-nostop", testId, testId, "ok");

        await().atMost(Duration.ofSeconds(30)).until(() -> receive(EmbeddedArtemis.DLQ, testId) != null);
        assertThat(listeners.effects("budget-nostop")).doesNotContainKey(testId);
    }

    @Test
    void withClientAcknowledgeAFailedMessageIsRedeliveredAndDuplicatesAreAcknowledged() {
        for (int i = 0; i < 5; i++) {
            send("client-ack", run + "-ca-" + i, "ok");
            send("client-ack", run + "-ca-" + i, "ok");
        }
        send("client-ack", run + "-ca-fail", "fail-once");

        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("client-ack").size() == 6);
        assertThat(listeners.effects("client-ack"))
                .allSatisfy((key, n) -> assertThat(n.get()).isEqualTo(1));
        assertThat(listeners.attempts("client-ack:" + run + "-ca-fail")).isEqualTo(2);
        await().atMost(Duration.ofSeconds(10)).until(() -> count("client-ack", "duplicate") == 5);
        await().atMost(Duration.ofSeconds(10)).until(() -> queueDepth("client-ack") == 0);
    }

    @Test
    void messagesSentWithTheTemplateInsideAHandlerCarryItsKeyAndOutsideNone() {
        String key = run + "-relay";
        send("relay", key, "relayed-" + run);
        context.getBean("downstream", org.springframework.jms.core.JmsTemplate.class)
                .convertAndSend("relayed", "outside-" + run);

        await().atMost(Duration.ofSeconds(30))
                .until(() -> listeners.effects("relayed").size() >= 2);
        assertThat(listeners.effects("relayed").keySet())
                .contains("relayed-" + run + "=" + key, "outside-" + run + "=none");
    }
}
