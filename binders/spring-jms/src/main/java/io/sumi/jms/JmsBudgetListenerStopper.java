package io.sumi.jms;

import io.micrometer.core.instrument.MeterRegistry;
import io.sumi.budget.BudgetPauser;
import io.sumi.budget.BudgetRegistry;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.context.SmartLifecycle;
import org.springframework.jms.listener.AbstractMessageListenerContainer;

/**
 * Stops a Spring JMS listener container while the budget its handler is bound to cannot take
 * calls, and starts it again when the budget's breaker half-opens (or closes): the rule is the
 * core's {@link BudgetPauser}, shared with every binder. A stopped
 * {@code DefaultMessageListenerContainer} keeps its consumers but receives nothing; the message
 * whose handler the budget refused is held by its consumer thread (see {@link SumiJmsMessageListener})
 * and run when the container starts again, so a budget stop costs no redelivery (which a JMS broker
 * would count towards its redelivery limit). Counters {@code sumi.budget.pauses} and
 * {@code sumi.budget.resumes} (tags {@code budget}, {@code listener}). Thread-safe.
 */
public class JmsBudgetListenerStopper extends BudgetPauser<AbstractMessageListenerContainer> implements SmartLifecycle {

    public JmsBudgetListenerStopper(
            BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry) {
        super(budgets, checkInterval, meterRegistry, "sumi-jms-budget-stopper");
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
        return SumiJmsMessageListener.destination(container);
    }

    @Override
    protected String describe(AbstractMessageListenerContainer container) {
        return "the JMS listener container of " + SumiJmsMessageListener.destination(container);
    }
}
