package io.sumi.stream;

import io.sumi.kafka.SumiKafkaErrorHandling;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.kafka.KafkaListenerContainerCustomizer;
import org.springframework.cloud.stream.binder.kafka.properties.KafkaConsumerProperties;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.util.StringUtils;

/**
 * Teaches the listener containers that Spring Cloud Stream's Kafka binder creates Sumi's
 * exceptions, with the classification of {@code @KafkaListener} containers
 * ({@link SumiKafkaErrorHandling}): a busy key ({@link io.sumi.consumer.exception.MessageBusyException}), a
 * spent budget ({@link io.sumi.consumer.budget.BudgetExhaustedException}) and a row awaiting
 * reconciliation ({@link io.sumi.consumer.exception.ReconciliationRequiredException}) are delivered again by
 * the container without limit, never given to its recoverer.
 *
 * <p>Why the container: when the binder's own retry ({@code max-attempts}) gives up on a binding
 * without a dead-letter topic, the binder rethrows to the container, whose error handler (the
 * binder's {@code DefaultErrorHandler} without retries, whose recoverer only logs) commits past the
 * record: a key whose holder died with a live lease was lost. That handler is replaced by
 * {@link SumiKafkaErrorHandling#withoutRetries(Duration)} (the same for every other exception:
 * logged and skipped at once, as before); any other error handler is taught in place
 * ({@link SumiKafkaErrorHandling#configure(AbstractMessageListenerContainer, Duration)}: none gets a
 * taught {@code DefaultErrorHandler}, one Sumi cannot teach fails the binding with a message that
 * says what to do).
 *
 * <p>The starter registers one when the Kafka binder is on the class path and the application has
 * no {@code ListenerContainerCustomizer} bean of its own (the binder takes only one). With your own
 * customizer, call {@link #configure(AbstractMessageListenerContainer, String, String, ExtendedConsumerProperties)}
 * of one of these at its end, after yours has set its error handler. Thread-safe.
 */
public final class SumiKafkaBinderContainerCustomizer implements KafkaListenerContainerCustomizer {

    private final Supplier<Duration> busyInterval;

    /**
     * @param busyInterval how often the container delivers a busy key (a refused budget) again;
     *     looked up per container
     */
    public SumiKafkaBinderContainerCustomizer(Supplier<Duration> busyInterval) {
        this.busyInterval = Objects.requireNonNull(busyInterval, "busyInterval");
    }

    /**
     * Teaches {@code container}'s error handler and after-rollback processor Sumi's exceptions.
     *
     * @throws IllegalStateException if the container's error handler is one Sumi cannot teach (not a
     *     {@code FailedRecordProcessor}); the message says what to do
     */
    @Override
    public void configure(
            AbstractMessageListenerContainer<?, ?> container,
            String destinationName,
            String group,
            ExtendedConsumerProperties<KafkaConsumerProperties> properties) {
        Duration interval = busyInterval.get();
        if (hasBindersHandlerWithoutRetries(container, properties)) {
            // Spring Kafka consults no back-off function for a handler whose back-off allows no retry:
            // taught in place, it would still give a busy key to the recoverer, which only logs.
            container.setCommonErrorHandler(SumiKafkaErrorHandling.withoutRetries(interval));
        }
        SumiKafkaErrorHandling.configure(container, interval);
    }

    /**
     * Whether the binder gave the container its {@code DefaultErrorHandler(new FixedBackOff(0, 0))}:
     * it does so for a record binding with {@code max-attempts > 1} (its own retry), no DLQ, no
     * transaction and no {@code common-error-handler-bean-name}.
     */
    @SuppressWarnings("removal")
    private static boolean hasBindersHandlerWithoutRetries(
            AbstractMessageListenerContainer<?, ?> container,
            ExtendedConsumerProperties<KafkaConsumerProperties> properties) {
        KafkaConsumerProperties kafka = properties.getExtension();
        return container.getCommonErrorHandler() != null
                && !properties.isBatchMode()
                && properties.getMaxAttempts() > 1
                && !kafka.isEnableDlq()
                && !StringUtils.hasText(kafka.getCommonErrorHandlerBeanName())
                && container.getContainerProperties().getKafkaAwareTransactionManager() == null
                && container.getContainerProperties().getTransactionManager() == null;
    }
}
