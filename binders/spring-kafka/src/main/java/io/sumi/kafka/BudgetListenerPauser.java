package io.sumi.kafka;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetExhaustedException;
import io.sumi.budget.BudgetPauser;
import io.sumi.budget.BudgetRegistry;
import java.time.Duration;
import java.util.Objects;
import java.util.function.Supplier;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.kafka.listener.AbstractMessageListenerContainer;
import org.springframework.kafka.listener.CommonErrorHandler;
import org.springframework.kafka.listener.ConcurrentMessageListenerContainer;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.kafka.listener.ListenerContainerRegistry;
import org.springframework.kafka.listener.MessageListenerContainer;

/**
 * Pauses Kafka listener containers while the budget their handler is bound to is exhausted, and
 * resumes them when the budget's breaker half-opens, so a spent budget costs no hot loop of refused
 * retries and dead-letters nothing. When to pause and resume is the core's {@link BudgetPauser},
 * the same for every binder (half-open probes, refused batches waiting for their {@code retryAt},
 * the lock that pairs a pause with its record); this class says how a Kafka container is paused.
 *
 * <p>How: on start (before the listener containers start) it wraps the error handler of every
 * container in the {@link ListenerContainerRegistry} in a {@link BudgetAwareErrorHandler}. When a
 * record fails with a {@link BudgetExhaustedException}, that handler seeks the record and the rest
 * of the poll back (nothing is acknowledged, the error handler's retry count is untouched) and
 * calls {@link #pause}: the container (the whole concurrent container, not just the child) is
 * paused. Containers created after start are not wrapped; wrap their error handlers with
 * {@link #errorHandler(CommonErrorHandler)}. Counters {@code sumi.budget.pauses} and
 * {@code sumi.budget.resumes} (tags {@code budget}, {@code listener}: the container's listener id).
 * Thread-safe.
 */
public class BudgetListenerPauser extends BudgetPauser<MessageListenerContainer> implements SmartLifecycle {

    private final Supplier<@Nullable ListenerContainerRegistry> containerLookup;
    private volatile @Nullable ListenerContainerRegistry containers;

    /**
     * @param containers the containers whose error handlers are wrapped on start, or {@code null}
     *     to wrap none (then wrap them with {@link #errorHandler})
     */
    public BudgetListenerPauser(
            BudgetRegistry budgets,
            @Nullable ListenerContainerRegistry containers,
            Duration checkInterval,
            @Nullable MeterRegistry meterRegistry) {
        this(budgets, () -> containers, checkInterval, meterRegistry);
    }

    /**
     * A pauser that looks the registry up when it starts. Use this one for a bean: a bean that takes
     * the registry as a dependency is started after it by Spring's lifecycle processor (dependencies
     * first, whatever the phase), when the containers have already copied their error handlers.
     *
     * @param containers supplies the containers whose error handlers are wrapped on start, or
     *     {@code null} to wrap none
     */
    public BudgetListenerPauser(
            BudgetRegistry budgets,
            Supplier<@Nullable ListenerContainerRegistry> containers,
            Duration checkInterval,
            @Nullable MeterRegistry meterRegistry) {
        super(budgets, checkInterval, meterRegistry, "sumi-budget-pauser");
        this.containerLookup = Objects.requireNonNull(containers, "containers");
    }

    /**
     * An error handler that gives budget refusals to this pauser and everything else to
     * {@code delegate}; without a delegate, a {@code DefaultErrorHandler} taught Sumi's exceptions
     * ({@link SumiKafkaErrorHandling}).
     */
    public CommonErrorHandler errorHandler(@Nullable CommonErrorHandler delegate) {
        if (delegate instanceof BudgetAwareErrorHandler aware && aware.pauser() == this) {
            return delegate;
        }
        // No handler: Spring Kafka's default would retry a busy key 10 times at once and then skip it;
        // Sumi's classification keeps busy keys (and budget refusals that reach it) retried.
        return new BudgetAwareErrorHandler(
                delegate != null
                        ? delegate
                        : SumiKafkaErrorHandling.configure(
                                new DefaultErrorHandler(), SumiKafkaErrorHandling.DEFAULT_BUSY_INTERVAL),
                this);
    }

    /** A Kafka pause is a request the consumer thread honours before its next poll: it never blocks. */
    @Override
    protected void pauseListener(MessageListenerContainer container) {
        container.pause();
    }

    @Override
    protected void resumeListener(MessageListenerContainer container) {
        container.resume();
    }

    /** A child of a concurrent container is paused through its parent (every child pauses). */
    @Override
    protected MessageListenerContainer target(MessageListenerContainer container) {
        ListenerContainerRegistry containers = this.containers;
        if (containers != null) {
            for (MessageListenerContainer candidate : containers.getAllListenerContainers()) {
                if (candidate == container
                        || (candidate instanceof ConcurrentMessageListenerContainer<?, ?> concurrent
                                && concurrent.getContainers().contains(container))) {
                    return candidate;
                }
            }
        }
        return container;
    }

    @Override
    protected String id(MessageListenerContainer container) {
        String id = container.getListenerId();
        return id != null ? id : String.valueOf(container);
    }

    @Override
    protected String describe(MessageListenerContainer container) {
        return "Kafka listener container '" + id(container) + "'";
    }

    // ------------------------------------------------------------------ lifecycle

    @Override
    public void start() {
        ListenerContainerRegistry containers = containerLookup.get();
        this.containers = containers;
        if (containers != null) {
            for (MessageListenerContainer container : containers.getAllListenerContainers()) {
                if (container instanceof AbstractMessageListenerContainer<?, ?> listenerContainer) {
                    listenerContainer.setCommonErrorHandler(errorHandler(listenerContainer.getCommonErrorHandler()));
                }
            }
        }
        super.start();
    }

    /** Starts just before the listener containers, so their error handlers are wrapped first. */
    @Override
    public int getPhase() {
        return AbstractMessageListenerContainer.DEFAULT_PHASE - 1;
    }
}
