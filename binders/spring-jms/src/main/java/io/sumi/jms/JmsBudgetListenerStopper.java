package io.sumi.jms;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.consumer.budget.BudgetRegistry;
import io.sumi.consumer.budget.ListenerContainerStopper;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.jms.listener.AbstractMessageListenerContainer;

/**
 * Stops a Spring JMS listener container while the budget its handler is bound to is exhausted,
 * and starts it again when the budget's breaker half-opens (or closes), as the Kafka binder pauses
 * and resumes its containers (the bookkeeping is {@link ListenerContainerStopper}'s, shared with
 * the Rabbit binder). A stopped {@code DefaultMessageListenerContainer} keeps its consumers but
 * receives nothing; the message whose handler the budget refused is held by its consumer thread
 * (see {@link SumiJmsMessageListener}) and run when the container starts again, so a budget stop
 * costs no redelivery (which a JMS broker would count towards its redelivery limit). Counters
 * {@code sumi.budget.pauses} and {@code sumi.budget.resumes} (tag {@code budget}). Thread-safe.
 */
public class JmsBudgetListenerStopper extends ListenerContainerStopper<AbstractMessageListenerContainer>
        implements SmartLifecycle {

    public JmsBudgetListenerStopper(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry) {
        super(budgets, checkInterval, meterRegistry, "sumi-jms-budget-stopper");
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
        return "the JMS listener container of " + SumiJmsMessageListener.destination(container);
    }
}
