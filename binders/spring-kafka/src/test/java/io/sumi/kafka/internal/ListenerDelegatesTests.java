package io.sumi.kafka.internal;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.jspecify.annotations.Nullable;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.listener.DelegatingMessageListener;
import org.springframework.kafka.listener.MessageListener;

class ListenerDelegatesTests {

    @Test
    void theChainRunsFromTheOutermostListenerToTheOneThatDelegatesToNothing() {
        MessageListener<String, String> adapter = record -> {};
        Wrapper inner = new Wrapper(adapter);
        Wrapper outer = new Wrapper(inner);

        assertThat(ListenerDelegates.chain(outer)).containsExactly(outer, inner, adapter);
        assertThat(ListenerDelegates.innermost(outer)).isSameAs(adapter);
        assertThat(ListenerDelegates.chain(adapter)).containsExactly(adapter);
    }

    @Test
    void aListenerThatNamesItselfOrACycleEndsTheChainAndNullIsEmpty() {
        Wrapper self = new Wrapper(null);
        self.delegate = self;
        Wrapper first = new Wrapper(null);
        Wrapper second = new Wrapper(first);
        first.delegate = second;

        assertThat(ListenerDelegates.chain(self)).containsExactly(self);
        assertThat(ListenerDelegates.chain(first)).containsExactly(first, second);
        assertThat(ListenerDelegates.chain(new Wrapper(null))).hasSize(1);
        assertThat(ListenerDelegates.chain(null)).isEmpty();
        assertThat(ListenerDelegates.innermost(null)).isNull();
    }

    private static final class Wrapper implements MessageListener<String, String>, DelegatingMessageListener<Object> {

        private @Nullable Object delegate;

        Wrapper(@Nullable Object delegate) {
            this.delegate = delegate;
        }

        @Override
        public void onMessage(ConsumerRecord<String, String> data) {}

        @Override
        @SuppressWarnings("NullAway") // a delegate of null is what the chain must survive
        public Object getDelegate() {
            return delegate;
        }
    }
}
