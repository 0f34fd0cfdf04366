package io.sumi.jms;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.jms.internal.JmsListenerBinder;
import org.junit.jupiter.api.Test;
import org.springframework.jms.annotation.JmsListener;

class JmsListenerBinderTests {

    static class Handlers {
        @JmsListener(destination = "q")
        @IdempotentHandler
        public void listener(String payload) {}

        @IdempotentHandler
        public void service(String payload) {}
    }

    @Test
    void theBinderIsRegisteredWithTheServiceLoaderAndOwnsItsListenersOnly() throws Exception {
        assertThat(ListenerBinders.installed().binders())
                .extracting(ListenerBinder::name)
                .contains("jms");
        assertThat(ListenerBinders.installed()
                        .owns(
                                JmsListenerBinder.class,
                                Handlers.class.getMethod("listener", String.class),
                                Handlers.class))
                .isTrue();
        assertThat(ListenerBinders.installed()
                        .owns(
                                JmsListenerBinder.class,
                                Handlers.class.getMethod("service", String.class),
                                Handlers.class))
                .isFalse();
    }
}
