package io.sumi.autoconfigure;

import java.util.List;
import org.springframework.boot.EnvironmentPostProcessor;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.context.properties.bind.Binder;
import org.springframework.core.env.ConfigurableEnvironment;

/**
 * Refuses start-up when the application still sets a {@code sumi.*} property that Sumi removed,
 * naming the property and what replaces it.
 *
 * <p>Why a failure and not only a metadata deprecation: Spring Boot ignores a property no
 * {@code @ConfigurationProperties} field binds, so a removed property would be dropped in silence
 * (an IDE shows the metadata's error level, but a build or a container does not). It runs as an
 * {@link EnvironmentPostProcessor} so that the message comes before any auto-configuration binds,
 * and so before a failure about a value the application never set. The names are looked up with
 * Boot's relaxed binding ({@code SUMI_KAFKA_BUSYMAXWAIT} is found too). Every entry has a
 * {@code deprecation} entry of level {@code error} in
 * {@code META-INF/additional-spring-configuration-metadata.json}.
 */
class SumiRetiredProperties implements EnvironmentPostProcessor {

    /** A removed property and what the application should do instead. */
    record Retired(String name, String instead) {}

    static final List<Retired> REMOVED = List.of(new Retired(
            "sumi.kafka.busy-max-wait",
            "a busy key on Kafka is retried every sumi.kafka.busy-retry-interval until it can run, so there is"
                    + " no longest wait to set; delete the property"));

    @Override
    public void postProcessEnvironment(ConfigurableEnvironment environment, SpringApplication application) {
        Binder binder = Binder.get(environment);
        for (Retired retired : REMOVED) {
            if (binder.bind(retired.name(), String.class).isBound()) {
                throw new IllegalStateException(
                        retired.name() + " was removed in Sumi 0.1.0 and is still set: " + retired.instead() + ".");
            }
        }
    }
}
