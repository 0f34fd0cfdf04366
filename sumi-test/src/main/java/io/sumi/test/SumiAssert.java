package io.sumi.test;

import org.assertj.core.api.AbstractAssert;

/** Assertions over a {@link SumiTest}: pick a consumer. */
public final class SumiAssert extends AbstractAssert<SumiAssert, SumiTest> {

    SumiAssert(SumiTest actual) {
        super(actual, SumiAssert.class);
    }

    /**
     * Assertions over one consumer: a ledger namespace (the listener id of an
     * {@code @IdempotentHandler} {@code @KafkaListener} by default, the bean name of a Stream
     * function), or the consumer group of a listener without Sumi.
     */
    public ConsumerAssert consumer(String name) {
        isNotNull();
        return new ConsumerAssert(actual, name);
    }
}
