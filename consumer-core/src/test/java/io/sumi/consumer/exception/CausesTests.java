package io.sumi.consumer.exception;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;

class CausesTests {

    @Test
    void findsTheFirstOfATypeThroughWrappers() {
        MessageBusyException busy = new MessageBusyException("busy");
        RuntimeException wrapped = new RuntimeException("adapter", new IllegalStateException("inner", busy));

        assertThat(Causes.find(wrapped, MessageBusyException.class)).containsSame(busy);
        assertThat(Causes.find(wrapped, IdempotencyException.class)).containsSame(busy);
        assertThat(Causes.find(wrapped, ArithmeticException.class)).isEmpty();
        assertThat(Causes.chain(wrapped)).hasSize(3);
        assertThat(Causes.chain(null)).isEmpty();
    }

    @Test
    void endsOnACyclicChain() {
        RuntimeException a = new RuntimeException("a");
        RuntimeException b = new RuntimeException("b", a);
        a.initCause(b);

        assertThat(Causes.chain(a)).containsExactly(a, b);
        assertThat(Causes.find(a, IllegalStateException.class)).isEmpty();
    }
}
