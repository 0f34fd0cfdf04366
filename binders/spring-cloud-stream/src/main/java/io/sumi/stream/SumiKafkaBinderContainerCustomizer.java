package io.sumi.stream;

import io.sumi.kafka.SumiKafkaErrorHandling;
import io.sumi.stream.internal.KafkaContainerStops;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.beans.BeansException;
import org.springframework.cloud.stream.binder.ExtendedConsumerProperties;
import org.springframework.cloud.stream.binder.kafka.KafkaListenerContainerCustomizer;
import org.springframework.cloud.stream.binder.kafka.properties.KafkaConsumerProperties;
import org.springframework.context.ApplicationContext;
import org.springframework.context.ApplicationContextAware;
import org.springframework.integration.channel.AbstractMessageChannel;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.messaging.SubscribableChannel;
import org.springframework.util.StringUtils;

/**
 * Teaches the listener containers that Spring Cloud Stream's Kafka binder creates Sumi's
 * exceptions, with the classification of {@code @KafkaListener} containers
 * ({@link SumiKafkaErrorHandling}): a busy key ({@link io.sumi.consumer.exception.MessageBusyException}), a
 * spent budget ({@link io.sumi.budget.BudgetExhaustedException}) and a row awaiting
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
 * <p>A container's stop (a binding's stop, the application's close) ends what Sumi does with the
 * message in hand: its hold in place ends (a busy key, an unreachable ledger), and a message that
 * did not succeed is left unsettled for redelivery
 * ({@link io.sumi.consumer.exception.ListenerStoppingException}): the binder's retry does not run
 * it again, its error channel (the DLQ) does not get it, and the container's error handler seeks
 * back to it, so the restarted consumer (or the one the rebalance gives the partition) runs it. For
 * that, the container is bound to its consumer threads (a record and a batch interceptor, next to
 * the container's own), and the binding's error channel gets an interceptor; the latter needs the
 * application context, where it finds the channel: a bean gets it, a customizer built by hand is
 * given it with {@link #setApplicationContext} (without it a warning says that such a message may
 * be dead-lettered).
 *
 * <p>The starter registers one when the Kafka binder is on the class path and the application has
 * no {@code ListenerContainerCustomizer} bean of its own (the binder takes only one). With your own
 * customizer, call {@link #configure(AbstractMessageListenerContainer, String, String, ExtendedConsumerProperties)}
 * of one of these at its end, after yours has set its error handler. Thread-safe.
 */
public final class SumiKafkaBinderContainerCustomizer
        implements KafkaListenerContainerCustomizer, ApplicationContextAware {

    private static final Logger log = LoggerFactory.getLogger(SumiKafkaBinderContainerCustomizer.class);

    private final Supplier<Duration> busyInterval;
    private @Nullable ApplicationContext context;

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
        KafkaContainerStops.watch(container);
        guardErrorChannel(properties.getBindingName());
    }

    @Override
    public void setApplicationContext(ApplicationContext context) throws BeansException {
        this.context = context;
    }

    /**
     * Keeps a message the container's stop interrupted from the binding's error channel
     * ({@code <binder>.<binding>.errors}, registered by the binder before it calls this customizer):
     * its subscribers would dead-letter it.
     */
    private void guardErrorChannel(@Nullable String bindingName) {
        if (bindingName == null) {
            return;
        }
        AbstractMessageChannel channel = errorChannel(bindingName);
        if (channel == null) {
            log.warn(
                    "No error channel of binding '{}' found{}: a message its container's stop interrupts may be"
                            + " dead-lettered by the binder instead of being delivered again after the restart",
                    bindingName,
                    context == null ? " (the customizer is not a bean: no application context)" : "");
            return;
        }
        KafkaContainerStops.guard(channel, bindingName);
    }

    private @Nullable AbstractMessageChannel errorChannel(String bindingName) {
        if (context == null) {
            return null;
        }
        String suffix = "." + bindingName + ".errors";
        for (String name : context.getBeanNamesForType(SubscribableChannel.class, false, false)) {
            if (name.endsWith(suffix) && context.getBean(name) instanceof AbstractMessageChannel channel) {
                return channel;
            }
        }
        return null;
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
