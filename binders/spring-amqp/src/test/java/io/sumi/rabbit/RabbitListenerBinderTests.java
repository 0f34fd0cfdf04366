package io.sumi.rabbit;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.rabbit.internal.RabbitListenerBinder;
import org.junit.jupiter.api.Test;
import org.springframework.amqp.rabbit.annotation.RabbitListener;

class RabbitListenerBinderTests {

    static class Handlers {
        @RabbitListener(queues = "q")
        @IdempotentHandler
        public void listener(String payload) {}

        @IdempotentHandler
        public void service(String payload) {}
    }

    @Test
    void theBinderIsRegisteredWithTheServiceLoaderAndOwnsItsListenersOnly() throws Exception {
        assertThat(ListenerBinders.installed().binders())
                .extracting(ListenerBinder::name)
                .contains("rabbit");
        assertThat(ListenerBinders.installed()
                        .owns(
                                RabbitListenerBinder.class,
                                Handlers.class.getMethod("listener", String.class),
                                Handlers.class))
                .isTrue();
        assertThat(ListenerBinders.installed()
                        .owns(
                                RabbitListenerBinder.class,
                                Handlers.class.getMethod("service", String.class),
                                Handlers.class))
                .isFalse();
    }
}
