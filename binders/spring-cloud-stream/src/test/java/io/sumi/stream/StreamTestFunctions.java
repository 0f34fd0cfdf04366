package io.sumi.stream;

import io.sumi.consumer.IdempotencyContext;
import io.sumi.consumer.IdempotentHandler;
import java.util.function.Consumer;
import org.springframework.context.annotation.Bean;
import org.springframework.context.annotation.Configuration;
import org.springframework.jdbc.core.JdbcTemplate;

/**
 * The functional beans the Kafka and the Rabbit binder tests share (each binder's bindings name
 * them in its profile's properties): the effects they write, a function that fails twice and
 * one whose messages carry no key.
 */
@Configuration(proxyBeanMethods = false)
class StreamTestFunctions {

    @Bean
    Effects effects(JdbcTemplate jdbc) {
        jdbc.execute("CREATE TABLE IF NOT EXISTS sumi_stream_effects (consumer VARCHAR(200), message_id VARCHAR(200))");
        return new Effects();
    }

    /** Takes only the payload: the key still comes from the message's header. */
    @Bean
    @IdempotentHandler
    Consumer<String> flaky(Effects effects) {
        return payload -> {
            String key = IdempotencyContext.current().key();
            effects.effect("flaky-attempts:" + key);
            if (effects.count("flaky-attempts:" + key) < 3) {
                throw new IllegalStateException("transient failure");
            }
            effects.effect("flaky:" + key);
        };
    }

    @Bean
    @IdempotentHandler
    Consumer<String> noKey(Effects effects) {
        return payload -> effects.effect("nokey-calls");
    }
}
