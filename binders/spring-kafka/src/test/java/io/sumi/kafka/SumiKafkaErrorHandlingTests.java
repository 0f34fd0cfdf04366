package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.budget.BudgetExhaustedException;
import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.exception.LedgerUnavailableException;
import io.sumi.consumer.exception.ListenerStoppingException;
import io.sumi.consumer.exception.MessageBusyException;
import io.sumi.consumer.exception.MissingIdempotencyKeyException;
import io.sumi.consumer.exception.ReconciliationRequiredException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.BiPredicate;
import java.util.function.Predicate;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.MockConsumer;
import org.apache.kafka.clients.consumer.internals.AutoOffsetResetStrategy;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.core.DefaultKafkaConsumerFactory;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.KafkaMessageListenerContainer;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.ListenerExecutionFailedException;
import org.springframework.kafka.listener.MessageListener;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.backoff.FixedBackOff;

/**
 * Sumi's classification on a Spring Kafka error handler, driven through
 * {@link DefaultErrorHandler#handleOne} with a mock consumer and a container that never starts:
 * what goes to the recoverer at once, what is retried without limit, what keeps the handler's own
 * back-off; and which containers {@link SumiErrorHandlerConfigurer} teaches or refuses.
 */
class SumiKafkaErrorHandlingTests {

    private static final Duration BUSY_INTERVAL = Duration.ofMillis(1);

    private final ConsumerRecord<String, String> record = new ConsumerRecord<>("orders", 0, 7, "key", "value");
    private final MockConsumer<String, String> consumer = new MockConsumer<>(AutoOffsetResetStrategy.EARLIEST.name());
    private final List<ConsumerRecord<?, ?>> recovered = new ArrayList<>();
    private final KafkaMessageListenerContainer<String, String> container = container("orders", record -> {});

    static KafkaMessageListenerContainer<String, String> container(
            String id, MessageListener<String, String> listener) {
        ContainerProperties properties = new ContainerProperties("orders");
        properties.setMessageListener(listener);
        KafkaMessageListenerContainer<String, String> container =
                new KafkaMessageListenerContainer<>(new DefaultKafkaConsumerFactory<>(Map.of()), properties);
        container.setBeanName(id);
        return container;
    }

    /** A handler with 2 retries of its own, then the recoverer. */
    private DefaultErrorHandler handler() {
        return new DefaultErrorHandler((failed, ex) -> recovered.add(failed), new FixedBackOff(0, 2));
    }

    /** How many failed deliveries of the record it took until the recoverer had it; -1 if not within {@code attempts}. */
    private int failuresUntilRecovered(CommonErrorHandler handler, Exception cause, int attempts) {
        for (int i = 1; i <= attempts; i++) {
            if (handler.handleOne(
                    new ListenerExecutionFailedException("listener failed", cause), record, consumer, container)) {
                return i;
            }
        }
        return -1;
    }

    @Test
    void aMessageWithoutKeyGoesToTheRecovererAtOnce() {
        DefaultErrorHandler handler = SumiKafkaErrorHandling.configure(handler(), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new MissingIdempotencyKeyException("no key"), 5))
                .isEqualTo(1);
        assertThat(recovered).containsExactly(record);
    }

    @Test
    void aBusyKeyIsRetriedWithoutLimitAndNeverRecovered() {
        DefaultErrorHandler handler = SumiKafkaErrorHandling.configure(handler(), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
    }

    @Test
    void aBudgetRefusalIsRetriedWithoutLimitAndNeverRecovered() {
        DefaultErrorHandler handler = SumiKafkaErrorHandling.configure(handler(), BUSY_INTERVAL);
        BudgetExhaustedException refusal = new BudgetExhaustedException(
                "stripe", BudgetExhaustedException.Reason.LIMIT_REACHED, 3, 3, null, "spent");

        assertThat(failuresUntilRecovered(handler, refusal, 50)).isEqualTo(-1);
    }

    @Test
    void anUncertainOutcomeIsRetriedEvenWhereItWasClassifiedNotRetryable() {
        DefaultErrorHandler handler = handler();
        handler.addNotRetryableExceptions(ReconciliationRequiredException.class);
        SumiKafkaErrorHandling.configure(handler, BUSY_INTERVAL);

        // Its back-off doubles from 1 ms: a few failures stay quick.
        assertThat(failuresUntilRecovered(handler, new ReconciliationRequiredException("charges", "k", "RECONCILE"), 6))
                .isEqualTo(-1);
    }

    /**
     * Issue 19, "ledger down during the claim": the ledger's outage is not the record's fault, so it
     * never spends the handler's retries (the catalogue saw a record dead-lettered after 6 refused
     * claims), not even with a handler that allows none. The negative control: the handler's own
     * failure with a connection failure of its own database inside keeps the handler's back-off.
     */
    @Test
    void anUnreachableLedgerIsRetriedWithoutLimitButTheHandlersOwnConnectionFailureIsNot() {
        java.sql.SQLTransientConnectionException lost =
                new java.sql.SQLTransientConnectionException("connection lost", "08006");
        DefaultErrorHandler handler = SumiKafkaErrorHandling.configure(handler(), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new LedgerUnavailableException("orders", "claim", lost), 50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
        assertThat(failuresUntilRecovered(handler, new IllegalStateException("the handler's database", lost), 10))
                .isEqualTo(3);

        DefaultErrorHandler withoutRetries =
                new DefaultErrorHandler((failed, ex) -> recovered.add(failed), new FixedBackOff(0, 0));
        container.setCommonErrorHandler(withoutRetries);
        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);
        assertThat(failuresUntilRecovered(withoutRetries, new LedgerUnavailableException("orders", "claim", lost), 50))
                .isEqualTo(-1);
    }

    @Test
    void otherFailuresKeepTheHandlersOwnBackOff() {
        DefaultErrorHandler handler = SumiKafkaErrorHandling.configure(handler(), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new IllegalStateException("smtp down"), 10))
                .isEqualTo(3);
    }

    /**
     * Issue 19, A4. Spring Kafka consults no back-off function for a handler whose back-off allows
     * no retry: it gave a busy key to its recoverer on the first failure (dead-lettered or skipped).
     * Sumi now makes it retry its own exceptions in place, whatever the back-off; other failures
     * still go to the recoverer at once.
     */
    @Test
    void aHandlerWithoutRetriesRetriesABusyKeyInPlaceAndRecoversOtherFailuresAtOnce() {
        DefaultErrorHandler handler =
                new DefaultErrorHandler((failed, ex) -> recovered.add(failed), new FixedBackOff(0, 0));
        container.setCommonErrorHandler(handler);

        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);

        assertThat(container.getCommonErrorHandler()).isSameAs(handler);
        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
        assertThat(failuresUntilRecovered(handler, new IllegalStateException("smtp down"), 5))
                .isEqualTo(1);
        assertThat(recovered).containsExactly(record);
    }

    @Test
    void aHandlerWithoutRetriesInsideTheBudgetAwareHandlerRetriesABusyKeyInPlace() {
        BudgetListenerPauser pauser = new BudgetListenerPauser(
                io.sumi.budget.BudgetRegistry.builder().build(),
                (ListenerContainerRegistry) null,
                Duration.ofSeconds(1),
                null);
        DefaultErrorHandler handler =
                new DefaultErrorHandler((failed, ex) -> recovered.add(failed), new FixedBackOff(0, 0));
        container.setCommonErrorHandler(pauser.errorHandler(handler));

        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
    }

    @Test
    void withoutRetriesRetriesABusyKeyAndGivesOtherFailuresToTheRecovererAtOnce() {
        DefaultErrorHandler handler =
                SumiKafkaErrorHandling.withoutRetries((failed, ex) -> recovered.add(failed), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
        assertThat(failuresUntilRecovered(handler, new IllegalStateException("smtp down"), 5))
                .isEqualTo(1);
        assertThat(recovered).containsExactly(record);
    }

    /**
     * Issue 19, the Stream binder's stop: a message its container's stop interrupted (its handler
     * failed, or its hold ended) is left for redelivery after the restart: the binder's handler
     * without retries, which skips (or dead-letters) every other failure at once, never recovers it.
     */
    @Test
    void withoutRetriesNeverRecoversAMessageItsContainersStopInterrupted() {
        DefaultErrorHandler handler =
                SumiKafkaErrorHandling.withoutRetries((failed, ex) -> recovered.add(failed), BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(
                        handler,
                        new ListenerStoppingException("orders", new IllegalStateException("smtp cut short")),
                        50))
                .isEqualTo(-1);
        assertThat(recovered).isEmpty();
    }

    @Test
    void withoutRetriesKeepsRecoveringAtOnceWhenTaughtAgain() {
        DefaultErrorHandler handler =
                SumiKafkaErrorHandling.withoutRetries((failed, ex) -> recovered.add(failed), BUSY_INTERVAL);
        container.setCommonErrorHandler(handler);

        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
        assertThat(failuresUntilRecovered(handler, new IllegalStateException("smtp down"), 5))
                .isEqualTo(1);
    }

    @Test
    void aContainerWithoutErrorHandlerGetsOneThatKnowsSumisExceptions() {
        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);

        assertThat(container.getCommonErrorHandler()).isInstanceOf(DefaultErrorHandler.class);
        assertThat(failuresUntilRecovered(container.getCommonErrorHandler(), new MessageBusyException("busy"), 30))
                .isEqualTo(-1);
    }

    @Test
    void aHandlerInsideTheBudgetAwareHandlerIsTaught() {
        DefaultErrorHandler delegate = handler();
        BudgetListenerPauser pauser = new BudgetListenerPauser(
                io.sumi.budget.BudgetRegistry.builder().build(),
                (ListenerContainerRegistry) null,
                Duration.ofSeconds(1),
                null);
        container.setCommonErrorHandler(pauser.errorHandler(delegate));

        SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL);

        assertThat(failuresUntilRecovered(delegate, new MissingIdempotencyKeyException("no key"), 5))
                .isEqualTo(1);
    }

    @Test
    void anErrorHandlerSumiCannotTeachIsRefusedWithWhatToDo() {
        container.setCommonErrorHandler(new CommonErrorHandler() {});

        assertThatThrownBy(() -> SumiKafkaErrorHandling.configure(container, BUSY_INTERVAL))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'orders'")
                .hasMessageContaining("cannot teach")
                .hasMessageContaining("sumi.kafka.configure-error-handlers=false");
    }

    static class GuardedListener implements MessageListener<String, String> {

        @Override
        @IdempotentHandler
        public void onMessage(ConsumerRecord<String, String> data) {}
    }

    static class PlainListener implements MessageListener<String, String> {

        @Override
        public void onMessage(ConsumerRecord<String, String> data) {}
    }

    @Test
    void theConfigurerLeavesAnUnteachableHandlerOnAContainerWithoutIdempotentHandler() {
        KafkaMessageListenerContainer<String, String> plain = container("plain", new PlainListener());
        CommonErrorHandler custom = new CommonErrorHandler() {};
        plain.setCommonErrorHandler(custom);
        KafkaMessageListenerContainer<String, String> bare = container("bare", new PlainListener());

        new SumiErrorHandlerConfigurer(() -> registry(plain, bare), BUSY_INTERVAL).start();

        assertThat(plain.getCommonErrorHandler()).isSameAs(custom);
        assertThat(bare.getCommonErrorHandler()).isInstanceOf(DefaultErrorHandler.class);
    }

    @Test
    void theConfigurerRefusesAnUnteachableHandlerOnAContainerRunningAnIdempotentHandler() {
        KafkaMessageListenerContainer<String, String> guarded = container("guarded", new GuardedListener());
        guarded.setCommonErrorHandler(new CommonErrorHandler() {});
        SumiErrorHandlerConfigurer configurer = new SumiErrorHandlerConfigurer(() -> registry(guarded), BUSY_INTERVAL);

        assertThatThrownBy(configurer::start)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("'guarded'");
        assertThat(configurer.isRunning()).isFalse();
    }

    /** Issue 19, A4: taught in place, whatever the container runs (no refusal to be swallowed). */
    @Test
    void theConfigurerTeachesAHandlerWithoutRetriesOnAnyContainer() {
        KafkaMessageListenerContainer<String, String> guarded = container("guarded", new GuardedListener());
        DefaultErrorHandler handler =
                new DefaultErrorHandler((failed, ex) -> recovered.add(failed), new FixedBackOff(0, 0));
        guarded.setCommonErrorHandler(handler);
        SumiErrorHandlerConfigurer configurer = new SumiErrorHandlerConfigurer(() -> registry(guarded), BUSY_INTERVAL);

        configurer.start();

        assertThat(configurer.isRunning()).isTrue();
        assertThat(failuresUntilRecovered(handler, new MessageBusyException("held by another consumer"), 50))
                .isEqualTo(-1);
    }

    private static ListenerContainerRegistry registry(MessageListenerContainer... containers) {
        List<MessageListenerContainer> all = List.of(containers);
        return new ListenerContainerRegistry() {

            @Override
            public MessageListenerContainer getListenerContainer(String id) {
                return all.stream()
                        .filter(c -> id.equals(c.getListenerId()))
                        .findFirst()
                        .orElse(null);
            }

            @Override
            public Collection<MessageListenerContainer> getListenerContainersMatching(Predicate<String> idMatcher) {
                return all.stream()
                        .filter(c -> idMatcher.test(c.getListenerId()))
                        .toList();
            }

            @Override
            public Collection<MessageListenerContainer> getListenerContainersMatching(
                    BiPredicate<String, MessageListenerContainer> matcher) {
                return all.stream()
                        .filter(c -> matcher.test(c.getListenerId(), c))
                        .toList();
            }

            @Override
            public MessageListenerContainer getUnregisteredListenerContainer(String id) {
                return null;
            }

            @Override
            public Set<String> getListenerContainerIds() {
                return Set.copyOf(all.stream()
                        .map(MessageListenerContainer::getListenerId)
                        .toList());
            }

            @Override
            public Collection<MessageListenerContainer> getListenerContainers() {
                return all;
            }

            @Override
            public Collection<MessageListenerContainer> getAllListenerContainers() {
                return all;
            }
        };
    }
}
