package io.sumi.faults.app;

import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.time.Duration;
import org.springframework.boot.SpringApplication;
import org.springframework.boot.autoconfigure.SpringBootApplication;
import org.springframework.boot.autoconfigure.condition.ConditionalOnMissingBean;
import org.springframework.boot.autoconfigure.condition.ConditionalOnProperty;
import org.springframework.boot.context.event.ApplicationReadyEvent;
import org.springframework.boot.context.properties.EnableConfigurationProperties;
import org.springframework.context.annotation.Bean;
import org.springframework.context.event.EventListener;
import org.springframework.http.client.SimpleClientHttpRequestFactory;
import org.springframework.kafka.listener.DefaultErrorHandler;
import org.springframework.util.backoff.FixedBackOff;
import org.springframework.web.client.RestClient;

/**
 * The application under test of the fault suite: an order service without HTTP.
 *
 * <ul>
 *   <li>{@link OrderGenerator} creates this instance's share of the orders, each one an
 *   {@code orders} row and an outbox message committed in one transaction;</li>
 *   <li>Sumi's outbox dispatcher publishes them to the {@code orders} topic;</li>
 *   <li>the shipment listener writes one {@code shipments} row per order (transactional mode);</li>
 *   <li>the charge listener charges each order at the HTTP payment provider (lease mode, the key
 *   passed on as {@code Idempotency-Key} by Sumi's RestClient interceptor).</li>
 * </ul>
 *
 * With {@code fault.guard=false} the listeners are the same code without Sumi
 * ({@link PlainListeners}): the negative control of the suite.
 */
@SpringBootApplication
@EnableConfigurationProperties(FaultAppProperties.class)
public class FaultApplication {

    public static void main(String[] args) {
        SpringApplication.run(FaultApplication.class, args);
    }

    /** The driver waits for this line in the instance's log before it counts the instance as up. */
    @EventListener(ApplicationReadyEvent.class)
    void ready() {
        System.out.println("FAULT-APP READY");
    }

    /**
     * Retries a failed record every half second for as long as it fails, as an application that
     * must not drop orders would configure it: a database or provider outage never sends a record
     * past. {@code fault.error-handler=none} leaves Spring Kafka's default in place.
     */
    @Bean
    @ConditionalOnProperty(name = "fault.error-handler", havingValue = "retry", matchIfMissing = true)
    DefaultErrorHandler retryingErrorHandler() {
        return new DefaultErrorHandler(new FixedBackOff(500, FixedBackOff.UNLIMITED_ATTEMPTS));
    }

    /** The provider's client, from Boot's builder, which carries Sumi's Idempotency-Key interceptor. */
    @Bean
    PaymentProviderClient paymentProviderClient(RestClient.Builder builder, FaultAppProperties properties) {
        SimpleClientHttpRequestFactory requestFactory = new SimpleClientHttpRequestFactory();
        requestFactory.setConnectTimeout(Duration.ofSeconds(2));
        requestFactory.setReadTimeout(Duration.ofSeconds(5));
        return new PaymentProviderClient(builder.baseUrl(properties.providerUrl())
                .requestFactory(requestFactory)
                .build());
    }

    @Bean
    @ConditionalOnMissingBean(MeterRegistry.class)
    SimpleMeterRegistry meterRegistry() {
        return new SimpleMeterRegistry();
    }
}
