package io.sumi.kafka;

import java.lang.reflect.Field;
import java.util.Map;
import java.util.Objects;
import java.util.function.Supplier;
import org.apache.kafka.clients.consumer.ConsumerConfig;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.core.ConsumerFactory;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.BatchMessageListener;
import org.springframework.kafka.listener.ContainerProperties;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;
import org.springframework.util.ReflectionUtils;

/**
 * Refuses, before the containers start, a record-listener container that runs an
 * {@code @IdempotentHandler} with the poll-level claim on ({@code sumi.kafka.poll-claim}) but whose
 * offsets Sumi cannot come before: a container with a transaction manager (Kafka transactions send
 * the offsets through the producer) or with {@code enable.auto.commit=true} (the client commits
 * inside {@code poll()}, and the new consumer group protocol commits from a background thread).
 * Every {@link ContainerProperties.AckMode} commits through the consumer, which Sumi wraps, so every
 * AckMode works (with {@code RECORD} each commit writes one completion).
 */
public final class PollClaimContainerCheck implements SmartLifecycle {

    private static final @Nullable Field CONSUMER_FACTORY =
            ReflectionUtils.findField(AbstractMessageListenerContainer.class, "consumerFactory");

    private final Supplier<? extends ListenerContainerRegistry> containers;
    private volatile boolean running;

    public PollClaimContainerCheck(Supplier<? extends ListenerContainerRegistry> containers) {
        this.containers = Objects.requireNonNull(containers, "containers");
    }

    @Override
    public void start() {
        for (MessageListenerContainer container : containers.get().getAllListenerContainers()) {
            if (container instanceof AbstractMessageListenerContainer<?, ?> listenerContainer) {
                check(listenerContainer);
            }
        }
        running = true;
    }

    /**
     * Refuses a container whose offset commits the poll-level claim cannot precede.
     *
     * @throws IllegalStateException if the container runs an {@code @IdempotentHandler} record
     *     listener (or Sumi cannot tell) and commits its offsets where Sumi cannot come first
     */
    public static void check(AbstractMessageListenerContainer<?, ?> container) {
        ContainerProperties properties = container.getContainerProperties();
        if (properties.getMessageListener() instanceof BatchMessageListener<?, ?>
                || Boolean.FALSE.equals(SumiErrorHandlerConfigurer.runsIdempotentHandler(container))) {
            return;
        }
        String problem = null;
        if (SumiKafkaErrorHandling.isTransactional(container)) {
            problem = "it commits offsets in Kafka transactions (a transaction manager is set), through the producer,"
                    + " where Sumi cannot write the poll's completions first";
        } else if (autoCommit(container)) {
            problem = "enable.auto.commit is true: the Kafka client commits offsets by itself, where Sumi cannot"
                    + " write the poll's completions first";
        }
        if (problem != null) {
            throw new IllegalStateException("Kafka listener container '" + container.getListenerId()
                    + "' runs an @IdempotentHandler record listener with sumi.kafka.poll-claim=true, but " + problem
                    + ". Set sumi.kafka.poll-claim=false (each record is then claimed and completed on its own), or"
                    + " remove the transaction manager / set enable.auto.commit=false (Spring Kafka's default)."
                    + " See docs/kafka-poll-claim.md");
        }
    }

    private static boolean autoCommit(AbstractMessageListenerContainer<?, ?> container) {
        Object fromContainer = container
                .getContainerProperties()
                .getKafkaConsumerProperties()
                .get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG);
        if (fromContainer != null) {
            return isTrue(fromContainer);
        }
        // The container does not expose its consumer factory; Spring Kafka's own field.
        if (CONSUMER_FACTORY != null) {
            ReflectionUtils.makeAccessible(CONSUMER_FACTORY);
            if (ReflectionUtils.getField(CONSUMER_FACTORY, container) instanceof ConsumerFactory<?, ?> factory) {
                Map<String, Object> config = factory.getConfigurationProperties();
                return isTrue(config.get(ConsumerConfig.ENABLE_AUTO_COMMIT_CONFIG));
            }
        }
        return false;
    }

    private static boolean isTrue(@Nullable Object value) {
        return value != null && Boolean.parseBoolean(value.toString());
    }

    @Override
    public void stop() {
        running = false;
    }

    @Override
    public boolean isRunning() {
        return running;
    }

    /** Before the listener containers. */
    @Override
    public int getPhase() {
        return AbstractMessageListenerContainer.DEFAULT_PHASE - 3;
    }
}
