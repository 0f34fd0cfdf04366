package io.sumi.rabbit;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetPauser;
import io.sumi.budget.BudgetRegistry;
import java.time.Duration;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.context.SmartLifecycle;

/**
 * Stops a Spring AMQP listener container while the budget its handler is bound to cannot take
 * calls, and starts it again when the budget's breaker half-opens (or closes): the rule is the
 * core's {@link BudgetPauser}, shared with every binder. RabbitMQ has no pause: a stopped container
 * cancels its consumers and the broker keeps the queue's messages (the unacknowledged ones are
 * requeued) for the other consumers, or for this one when it starts again. The container is
 * stopped and started on the pauser's thread, never on its own consumer thread (a stop waits for
 * the consumers). Counters {@code sumi.budget.pauses} and {@code sumi.budget.resumes} (tags
 * {@code budget}, {@code listener}). Thread-safe.
 */
public class RabbitBudgetListenerStopper extends BudgetPauser<AbstractMessageListenerContainer>
        implements SmartLifecycle {

    public RabbitBudgetListenerStopper(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry) {
        super(budgets, checkInterval, meterRegistry, "sumi-rabbit-budget-stopper");
    }

    @Override
    protected void pauseListener(AbstractMessageListenerContainer container) {
        runInBackground(container::stop);
    }

    @Override
    protected void resumeListener(AbstractMessageListenerContainer container) {
        runInBackground(container::start);
    }

    /** A container still stopping is started by a later check. */
    @Override
    protected boolean canResume(AbstractMessageListenerContainer container) {
        return !container.isRunning();
    }

    @Override
    protected String id(AbstractMessageListenerContainer container) {
        String id = container.getListenerId();
        return id != null ? id : String.join(",", container.getQueueNames());
    }

    @Override
    protected String describe(AbstractMessageListenerContainer container) {
        return "the Rabbit listener container of queue(s) " + Arrays.toString(container.getQueueNames());
    }
}
