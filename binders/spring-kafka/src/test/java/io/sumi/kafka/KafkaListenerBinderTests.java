package io.sumi.kafka;

import static org.assertj.core.api.Assertions.assertThat;

import io.sumi.consumer.IdempotentHandler;
import io.sumi.consumer.binder.ListenerBinder;
import io.sumi.consumer.binder.ListenerBinders;
import io.sumi.kafka.internal.KafkaListenerBinder;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.junit.jupiter.api.Test;
import org.springframework.kafka.annotation.KafkaListener;
import org.springframework.messaging.Message;

class KafkaListenerBinderTests {

    static class Handlers {
        @KafkaListener(topics = "t")
        @IdempotentHandler
        public void listener(String payload) {}

        @IdempotentHandler
        public void record(ConsumerRecord<String, String> record) {}

        @IdempotentHandler
        public void service(Message<String> message) {}
    }

    @Test
    void theKafkaBinderIsRegisteredWithTheServiceLoader() {
        assertThat(ListenerBinders.installed().binders())
                .extracting(ListenerBinder::name)
                .containsExactly("kafka");
    }

    @Test
    void itGuardsKafkaListenersAndRecordMethodsAndTakesUnclaimedServiceMethods() throws Exception {
        KafkaListenerBinder binder = new KafkaListenerBinder();

        assertThat(binder.guards(Handlers.class.getMethod("listener", String.class), Handlers.class))
                .isTrue();
        assertThat(binder.guards(Handlers.class.getMethod("record", ConsumerRecord.class), Handlers.class))
                .isTrue();
        assertThat(binder.guards(Handlers.class.getMethod("service", Message.class), Handlers.class))
                .isFalse();
        assertThat(ListenerBinders.installed()
                        .owns(
                                KafkaListenerBinder.class,
                                Handlers.class.getMethod("service", Message.class),
                                Handlers.class))
                .isTrue();
    }
}
