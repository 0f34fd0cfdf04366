package io.sumi.autoconfigure;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.composite.CompositeMeterRegistry;
import io.sumi.budget.BudgetPauser;
import io.sumi.budget.BudgetRegistry;
import java.lang.annotation.Documented;
import java.lang.annotation.ElementType;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.annotation.Target;
import java.time.Duration;
import org.jspecify.annotations.Nullable;
import org.springframework.beans.factory.ObjectProvider;
import org.springframework.boot.autoconfigure.condition.ConditionalOnBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;

/**
 * The budget stopper of a binder whose listener containers are stopped while their budget is spent
 * and started again when it can take calls (JMS and RabbitMQ, which have no pause that keeps the
 * consumer; Kafka's containers and Stream's bindings pause instead): when there is one, and how it
 * is built, written once for every such binder. Each binder's auto-configuration keeps a nested
 * configuration class, {@code @ConditionalOnClass(name = "io.sumi.budget.BudgetRegistry")} (sumi-budgets
 * is optional, and this class names its types), whose one bean method is annotated
 * {@link Conditions} and returns {@link #create}.
 */
final class BudgetStoppers {

    private BudgetStoppers() {}

    /**
     * A binder's stopper bean exists unless the application defines one of its type, when budgets
     * exist (a {@link BudgetRegistry}) and {@code sumi.budgets.pause.enabled} is not false.
     */
    @Target(ElementType.METHOD)
    @Retention(RetentionPolicy.RUNTIME)
    @Documented
    @ConditionalOnMissingBean
    @ConditionalOnBean(BudgetRegistry.class)
    @ConditionalOnProperty(prefix = "sumi.budgets.pause", name = "enabled", havingValue = "true", matchIfMissing = true)
    @interface Conditions {}

    /** A stopper's constructor: every such binder's takes the budgets, the check interval and the meters. */
    @FunctionalInterface
    interface Constructor<S extends BudgetPauser<?>> {
        S create(BudgetRegistry budgets, Duration checkInterval, @Nullable MeterRegistry meterRegistry);
    }

    /** The stopper, checking every {@code sumi.budgets.pause.check-interval}, counting in the application's meters. */
    static <S extends BudgetPauser<?>> S create(
            Constructor<S> constructor,
            BudgetRegistry budgets,
            SumiBudgetPauseProperties pause,
            ObjectProvider<MeterRegistry> meterRegistry) {
        return constructor.create(
                budgets, pause.checkInterval(), meterRegistry.getIfUnique(CompositeMeterRegistry::new));
    }
}
