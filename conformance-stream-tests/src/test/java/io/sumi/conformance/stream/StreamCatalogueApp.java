package io.sumi.conformance.stream;

import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import io.sumi.budget.BudgetRegistry;
import io.sumi.conformance.BudgetWindow;
import io.sumi.conformance.LedgerFaults;
import io.sumi.conformance.Work;
import org.springframework.boot.SpringBootConfiguration;
import org.springframework.boot.autoconfigure.EnableAutoConfiguration;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Import;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The Spring Cloud Stream application of the catalogue: Spring Boot, the starter, Sumi's Stream
 * binder, the catalogue's functions ({@link StreamCatalogueFunctions}); the profile
 * {@code stream-kafka} or {@code stream-rabbit} chooses the binder and its bindings. The DataSource
 * is wrapped by the ledger-down scenarios' {@link LedgerFaults}.
 */
@SpringBootConfiguration(proxyBeanMethods = false)
@EnableAutoConfiguration
@Import({StreamCatalogueFunctions.class, LedgerFaults.class})
public class StreamCatalogueApp {

    @Bean
    Work work(JdbcTemplate jdbc) {
        return new Work(jdbc);
    }

    @Bean
    SimpleMeterRegistry meters() {
        return new SimpleMeterRegistry();
    }

    @Bean
    BudgetWindow budgetWindow() {
        return new BudgetWindow();
    }

    /** The budget-bound function's budget, on the window's clock (the starter's registry backs off). */
    @Bean
    BudgetRegistry budgetRegistry(BudgetWindow window, SimpleMeterRegistry meters) {
        return window.registry(meters, StreamCatalogueFunctions.BUDGET);
    }
}
