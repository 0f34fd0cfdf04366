package io.sumi.autoconfigure;

import io.sumi.consumer.http.IdempotencyKeyExchangeFilter;
import io.sumi.consumer.http.IdempotencyKeyFormat;
import io.sumi.consumer.http.IdempotencyKeyInterceptor;
import io.sumi.kafka.IdempotencyKeyProducerInterceptor;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.jspecify.annotations.Nullable;
import org.springframework.boot.autoconfigure.AutoConfiguration;
import org.springframework.boot.autoconfigure.condition.ConditionalOnClass;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.properties.ConfigurationProperties;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.boot.context.properties.bind.DefaultValue;
import org.springframework.boot.kafka.autoconfigure.DefaultKafkaProducerFactoryCustomizer;
import org.springframework.boot.restclient.RestClientCustomizer;
import org.springframework.boot.restclient.RestTemplateCustomizer;
import org.springframework.boot.webclient.WebClientCustomizer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;

/**
 * Puts the current message's key on outgoing calls made inside idempotent handlers: on every
 * {@code RestClient} and {@code RestTemplate} built from Spring Boot's builders, every
 * {@code WebClient} built from Boot's builder, and every record produced through Boot's Kafka
 * producer factory. Outside a handler nothing is added.
 */
@AutoConfiguration(
        after = SumiAutoConfiguration.class,
        afterName = {
            "org.springframework.boot.restclient.autoconfigure.RestClientAutoConfiguration",
            "org.springframework.boot.webclient.autoconfigure.WebClientAutoConfiguration",
            "org.springframework.boot.kafka.autoconfigure.KafkaAutoConfiguration"
        })
@EnableConfigurationProperties({
    SumiPassthroughAutoConfiguration.PassthroughProperties.class,
    SumiPassthroughAutoConfiguration.KafkaPassthroughProperties.class
})
public class SumiPassthroughAutoConfiguration {

    /**
     * Key passthrough on outgoing HTTP calls, under {@code sumi.passthrough}.
     *
     * @param http outgoing HTTP calls
     */
    @ConfigurationProperties("sumi.passthrough")
    record PassthroughProperties(@DefaultValue Http http) {

        /**
         * @param enabled whether Boot-built RestClient, RestTemplate and WebClient instances get the key
         * @param headerName the request header that carries it
         */
        record Http(
                @DefaultValue("true") boolean enabled,
                @DefaultValue("Idempotency-Key") String headerName) {}
    }

    /**
     * Key passthrough on Kafka records, under {@code sumi.kafka.passthrough} beside the other
     * {@code sumi.kafka.*} settings (as {@code sumi.rabbit.passthrough} and {@code sumi.jms.passthrough});
     * {@code sumi.passthrough.kafka.*} before 0.1.0, still honoured ({@link SumiRetiredProperties}).
     *
     * @param enabled whether records produced inside a handler get the key
     * @param headerName the record header that carries it
     */
    @ConfigurationProperties("sumi.kafka.passthrough")
    record KafkaPassthroughProperties(
            @DefaultValue("true") boolean enabled,
            @DefaultValue("idempotency-key") String headerName) {}

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({IdempotencyKeyInterceptor.class, RestClientCustomizer.class})
    @ConditionalOnProperty(
            prefix = "sumi.passthrough.http",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static class RestClientPassthrough {

        @Bean
        @ConditionalOnMissingBean
        IdempotencyKeyInterceptor sumiIdempotencyKeyInterceptor(PassthroughProperties properties) {
            return new IdempotencyKeyInterceptor(properties.http().headerName(), IdempotencyKeyFormat.plain());
        }

        @Bean
        RestClientCustomizer sumiIdempotencyKeyRestClientCustomizer(IdempotencyKeyInterceptor interceptor) {
            return builder -> builder.requestInterceptor(interceptor);
        }

        @Bean
        RestTemplateCustomizer sumiIdempotencyKeyRestTemplateCustomizer(IdempotencyKeyInterceptor interceptor) {
            return template -> template.getInterceptors().add(interceptor);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass(
            name = {
                "org.springframework.web.reactive.function.client.WebClient",
                "org.springframework.boot.webclient.WebClientCustomizer"
            })
    @ConditionalOnProperty(
            prefix = "sumi.passthrough.http",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static class WebClientPassthrough {

        @Bean
        WebClientCustomizer sumiIdempotencyKeyWebClientCustomizer(PassthroughProperties properties) {
            IdempotencyKeyExchangeFilter filter =
                    new IdempotencyKeyExchangeFilter(properties.http().headerName(), IdempotencyKeyFormat.plain());
            return builder -> builder.filter(filter);
        }
    }

    @Configuration(proxyBeanMethods = false)
    @ConditionalOnClass({IdempotencyKeyProducerInterceptor.class, DefaultKafkaProducerFactoryCustomizer.class})
    @ConditionalOnProperty(
            prefix = "sumi.kafka.passthrough",
            name = "enabled",
            havingValue = "true",
            matchIfMissing = true)
    static class KafkaPassthrough {

        @Bean
        DefaultKafkaProducerFactoryCustomizer sumiIdempotencyKeyProducerFactoryCustomizer(
                KafkaPassthroughProperties properties) {
            return factory -> {
                Map<String, Object> configs = new HashMap<>();
                configs.put(
                        ProducerConfig.INTERCEPTOR_CLASSES_CONFIG,
                        withInterceptor(
                                factory.getConfigurationProperties().get(ProducerConfig.INTERCEPTOR_CLASSES_CONFIG)));
                configs.put(IdempotencyKeyProducerInterceptor.HEADER_CONFIG, properties.headerName());
                factory.updateConfigs(configs);
            };
        }

        /** The application's interceptors (a list, a class or a comma-separated string), then Sumi's. */
        static List<Object> withInterceptor(@Nullable Object existing) {
            List<Object> interceptors = new ArrayList<>();
            if (existing instanceof Collection<?> collection) {
                interceptors.addAll(collection);
            } else if (existing instanceof String text && !text.isBlank()) {
                Arrays.stream(text.split(","))
                        .map(String::trim)
                        .filter(name -> !name.isEmpty())
                        .forEach(interceptors::add);
            } else if (existing != null) {
                interceptors.add(existing);
            }
            boolean present = interceptors.stream()
                    .anyMatch(item -> item == IdempotencyKeyProducerInterceptor.class
                            || IdempotencyKeyProducerInterceptor.class.getName().equals(item.toString()));
            if (!present) {
                interceptors.add(IdempotencyKeyProducerInterceptor.class);
            }
            return interceptors;
        }
    }
}
