package io.sumi.autoconfigure;

import io.sumi.budget.BudgetRegistry;
import java.util.LinkedHashMap;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import org.springframework.boot.context.properties.bind.Bindable;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.context.ApplicationEvent;
import org.springframework.context.event.SmartApplicationListener;
import org.springframework.core.env.Environment;

/**
 * Re-reads {@code sumi.budgets.*} from the {@link Environment} and applies it to the live
 * {@link BudgetRegistry}: changed budgets are reconfigured in place (keeping their spend), new ones
 * are created. Budgets removed from the configuration keep running with their last settings.
 *
 * <p>It runs by itself on Spring Cloud's {@code EnvironmentChangeEvent} (published by
 * {@code /actuator/refresh}, Spring Cloud Config, Kubernetes config maps), without a compile
 * dependency on Spring Cloud. Without Spring Cloud, change a property source and call
 * {@link #refresh()}, or call {@link BudgetRegistry#update} directly.
 */
public class BudgetConfigurationRefresher implements SmartApplicationListener {

    private static final Logger log = LoggerFactory.getLogger(BudgetConfigurationRefresher.class);

    static final String ENVIRONMENT_CHANGE_EVENT =
            "org.springframework.cloud.context.environment.EnvironmentChangeEvent";

    private final Environment environment;
    private final BudgetRegistry registry;

    public BudgetConfigurationRefresher(Environment environment, BudgetRegistry registry) {
        this.environment = environment;
        this.registry = registry;
    }

    /**
     * Applies the current {@code sumi.budgets.*} settings.
     *
     * @return the budgets read, by name
     * @throws IllegalArgumentException if a budget's settings are invalid (no budget is changed then)
     */
    public Map<String, SumiBudgetProperties.Budget> refresh() {
        Map<String, SumiBudgetProperties.Budget> budgets = Binder.get(environment)
                .bind("sumi.budgets", Bindable.mapOf(String.class, SumiBudgetProperties.Budget.class))
                .map(SumiBudgetProperties::budgetsOnly)
                .orElse(Map.of());
        Map<String, io.sumi.budget.BudgetConfig> configs = new LinkedHashMap<>();
        budgets.forEach((name, budget) -> configs.put(name, budget.toConfig(name)));
        configs.forEach(registry::update);
        return budgets;
    }

    @Override
    public boolean supportsEventType(Class<? extends ApplicationEvent> eventType) {
        return eventType.getName().equals(ENVIRONMENT_CHANGE_EVENT);
    }

    @Override
    public void onApplicationEvent(ApplicationEvent event) {
        try {
            refresh();
        } catch (RuntimeException ex) {
            log.error("The changed sumi.budgets configuration is invalid; the budgets keep their settings", ex);
        }
    }
}
