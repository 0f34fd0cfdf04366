package com.example.sumifixtures.violating;

import io.sumi.consumer.IdempotentHandler;
import java.util.function.Supplier;
import org.springframework.context.annotation.Bean;
import org.springframework.kafka.annotation.KafkaListener;

/** @IdempotentHandler where no binder applies it. */
public class MisplacedHandlers {

    /** Not a listener, no message parameter: Sumi cannot tell which message it guards. */
    @IdempotentHandler
    public void sendMail(String payload) {}

    /** A listener, but private: the proxy never sees it. */
    @KafkaListener(topics = "t")
    @IdempotentHandler
    private void onPrivate(String payload) {}

    /** A Supplier bean: Stream's binder guards consumers and functions only. */
    @Bean
    @IdempotentHandler
    Supplier<String> ticks() {
        return () -> "tick";
    }
}
