package io.sumi.autoconfigure;

import java.util.Map;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.core.env.ConfigurableEnvironment;
import org.springframework.core.env.MapPropertySource;

/**
 * Places Sumi's {@code DEGRADED} health status between {@code OUT_OF_SERVICE} and {@code UP}, as a
 * default of the lowest precedence that any setting of
 * {@code management.endpoint.health.status.order} replaces.
 *
 * <p>Why: Spring Boot sorts a status it does not know <em>before</em> {@code DOWN}, so without this
 * a degraded outbox would hide a database that is {@code DOWN} in the aggregate (and answer 200).
 * The order of Boot's own statuses is unchanged. An application that sets its own order must add
 * {@code degraded} to it.
 */
class SumiHealthStatusOrder implements EnvironmentPostProcessor {

    static final String ORDER = "management.endpoint.health.status.order";

    static final String SOURCE = "sumiHealthStatusOrder";

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        if (environment.getPropertySources().contains(SOURCE)) {
            return;
        }
        environment
                .getPropertySources()
                .addLast(new MapPropertySource(SOURCE, Map.of(ORDER, "down,out-of-service,degraded,up,unknown")));
    }
}
