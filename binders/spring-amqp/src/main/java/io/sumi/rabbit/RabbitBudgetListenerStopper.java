package io.sumi.rabbit;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.consumer.budget.ListenerContainerStopper;
import java.time.Duration;
import java.util.Arrays;
import org.jspecify.annotations.Nullable;
import org.springframework.amqp.rabbit.listener.AbstractMessageListenerContainer;
import org.springframework.context.SmartLifecycle;

/**
 * Stops a Spring AMQP listener container while the budget its handler is bound to is exhausted,
 * and starts it again when the budget's breaker half-opens (or closes), as the Kafka binder pauses
 * and resumes its containers (the bookkeeping is {@link ListenerContainerStopper}'s). RabbitMQ has
 * no pause: a stopped container cancels its consumers and the broker keeps the queue's messages
 * (the unacknowledged ones are requeued) for the other consumers, or for this one when it starts
 * again. Counters {@code sumi.budget.pauses} and {@code sumi.budget.resumes} (tag {@code budget}).
 * Thread-safe.
 */
public class RabbitBudgetListenerStopper extends ListenerContainerStopper<AbstractMessageListenerContainer>
        implements SmartLifecycle {

    public RabbitBudgetListenerStopper(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry) {
        super(budgets, checkInterval, meterRegistry, "sumi-rabbit-budget-stopper");
    }

    @Override
    protected void stopContainer(AbstractMessageListenerContainer container) {
        container.stop();
    }

    @Override
    protected void startContainer(AbstractMessageListenerContainer container) {
        container.start();
    }

    @Override
    protected boolean isContainerRunning(AbstractMessageListenerContainer container) {
        return container.isRunning();
    }

    @Override
    protected String describe(AbstractMessageListenerContainer container) {
        return "the Rabbit listener container of queue(s) " + Arrays.toString(container.getQueueNames());
    }
}
