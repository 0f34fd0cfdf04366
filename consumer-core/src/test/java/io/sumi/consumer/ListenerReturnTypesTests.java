package io.sumi.consumer;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.lang.reflect.Method;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Future;
import org.junit.jupiter.api.Test;

/** The one rule of listener return types (issue 19, A2), without Reactor on the class path. */
class ListenerReturnTypesTests {

    @SuppressWarnings("unused")
    static class Methods {
        public void none() {}

        public String value() {
            return "";
        }

        public CompletableFuture<String> future() {
            return CompletableFuture.completedFuture("");
        }

        public CompletionStage<String> stage() {
            return CompletableFuture.completedFuture("");
        }

        public Future<String> plainFuture() {
            return CompletableFuture.completedFuture("");
        }

        public MyFuture narrowFuture() {
            return new MyFuture();
        }

        public java.util.concurrent.Flow.Publisher<String> publisher() {
            return subscriber -> {};
        }
    }

    static class MyFuture extends CompletableFuture<String> {}

    static Method method(String name) throws NoSuchMethodException {
        return Methods.class.getMethod(name);
    }

    @Test
    void classifiesReturnTypes() throws Exception {
        assertThat(ListenerReturnTypes.of(method("none"))).isEqualTo(ListenerReturnTypes.Kind.SYNCHRONOUS);
        assertThat(ListenerReturnTypes.of(method("value"))).isEqualTo(ListenerReturnTypes.Kind.SYNCHRONOUS);
        assertThat(ListenerReturnTypes.of(method("future"))).isEqualTo(ListenerReturnTypes.Kind.COMPLETION_STAGE);
        assertThat(ListenerReturnTypes.of(method("stage"))).isEqualTo(ListenerReturnTypes.Kind.COMPLETION_STAGE);
        assertThat(ListenerReturnTypes.of(method("plainFuture"))).isEqualTo(ListenerReturnTypes.Kind.REFUSED);
        assertThat(ListenerReturnTypes.of(method("narrowFuture"))).isEqualTo(ListenerReturnTypes.Kind.REFUSED);
        assertThat(ListenerReturnTypes.of(method("publisher"))).isEqualTo(ListenerReturnTypes.Kind.REFUSED);
    }

    @Test
    void checkRefusesWhatABinderCannotFollow() throws Exception {
        ListenerReturnTypes.check(method("future"), true, "the Kafka listener container", false, false);
        ListenerReturnTypes.check(method("value"), false, "a JMS listener container", false, false);
        ListenerReturnTypes.check(method("none"), true, "a batch container", false, true);
        assertThatThrownBy(() ->
                        ListenerReturnTypes.check(method("future"), false, "a JMS listener container", false, false))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("a JMS listener container acknowledges the message when the method returns");
        assertThatThrownBy(() ->
                        ListenerReturnTypes.check(method("future"), true, "the Kafka listener container", true, false))
                .hasMessageContaining("storeReply");
        assertThatThrownBy(() -> ListenerReturnTypes.check(method("plainFuture"), true, "x", false, false))
                .hasMessageContaining("whose completion Sumi cannot follow");
        assertThatThrownBy(
                        () -> ListenerReturnTypes.check(method("future"), true, "the batch container 'b'", false, true))
                .hasMessageContaining("runs as a batch listener (the batch container 'b')")
                .hasMessageContaining("Return void and wait for the work inside the method");
        assertThatThrownBy(() -> ListenerReturnTypes.checkBatch(method("future"), "the batch container 'b'"))
                .hasMessageContaining("runs as a batch listener");
    }

    @Test
    void convertsFutures() {
        CompletableFuture<String> future = new CompletableFuture<>();
        assertThat(ListenerReturnTypes.toFuture(future)).isSameAs(future);
        assertThat(ListenerReturnTypes.toFuture(null)).isCompletedWithValue(null);
        assertThat(ListenerReturnTypes.toResult(ListenerReturnTypes.Kind.COMPLETION_STAGE, future))
                .isSameAs(future);
        assertThatThrownBy(() -> ListenerReturnTypes.toFuture("not async"))
                .isInstanceOf(IllegalArgumentException.class);
    }
}
