package io.sumi.consumer.binder;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.sumi.consumer.IdempotentHandler;
import java.lang.annotation.Retention;
import java.lang.annotation.RetentionPolicy;
import java.lang.reflect.Method;
import org.aopalliance.intercept.MethodInterceptor;
import org.aopalliance.intercept.MethodInvocation;
import org.junit.jupiter.api.Test;
import org.springframework.aop.support.AopUtils;
import org.springframework.core.Ordered;

class ListenerBindersTests {

    @Retention(RetentionPolicy.RUNTIME)
    @interface AListener {}

    @Retention(RetentionPolicy.RUNTIME)
    @interface BListener {}

    static final class ABinder implements ListenerBinder {
        @Override
        public String name() {
            return "a";
        }

        @Override
        public boolean guards(Method method, Class<?> targetClass) {
            return method.isAnnotationPresent(AListener.class);
        }

        @Override
        public boolean takesUnclaimedMethods() {
            return true;
        }
    }

    static final class BBinder implements ListenerBinder {
        @Override
        public String name() {
            return "b";
        }

        @Override
        public boolean guards(Method method, Class<?> targetClass) {
            return method.isAnnotationPresent(BListener.class);
        }
    }

    static class Handlers {
        @AListener
        @IdempotentHandler
        public void a(String payload) {}

        @BListener
        @IdempotentHandler
        public void b(String payload) {}

        @IdempotentHandler
        public void service(String payload) {}

        @AListener
        @BListener
        @IdempotentHandler
        public void both(String payload) {}

        public void notAnnotated(@SuppressWarnings("unused") String payload) {}
    }

    static final class Advisor extends IdempotentHandlerAdvisorSupport {
        private static final long serialVersionUID = 1L;

        Advisor(Class<? extends ListenerBinder> binder, ListenerBinders binders) {
            super(binder, MethodInvocation::proceed, binders);
        }
    }

    private static Method method(String name) throws NoSuchMethodException {
        return Handlers.class.getMethod(name, String.class);
    }

    @Test
    void theBinderThatGuardsAMethodOwnsIt() throws Exception {
        ListenerBinders binders = ListenerBinders.of(new ABinder(), new BBinder());

        assertThat(binders.owner(method("a"), Handlers.class)).get().isInstanceOf(ABinder.class);
        assertThat(binders.owner(method("b"), Handlers.class)).get().isInstanceOf(BBinder.class);
        assertThat(binders.owns(BBinder.class, method("a"), Handlers.class)).isFalse();
    }

    @Test
    void aMethodNoBinderGuardsGoesToTheBinderThatTakesUnclaimedMethods() throws Exception {
        assertThat(ListenerBinders.of(new ABinder(), new BBinder()).owner(method("service"), Handlers.class))
                .get()
                .isInstanceOf(ABinder.class);
        assertThat(ListenerBinders.of(new BBinder()).owner(method("service"), Handlers.class))
                .isEmpty();
    }

    @Test
    void aMethodTwoBindersGuardIsRefusedWithBothNames() {
        ListenerBinders binders = ListenerBinders.of(new ABinder(), new BBinder());

        assertThatThrownBy(() -> binders.owner(method("both"), Handlers.class))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("Handlers.both")
                .hasMessageContaining("a, b");
    }

    @Test
    void twoBindersTakingUnclaimedMethodsAreRefused() {
        assertThatThrownBy(() -> ListenerBinders.of(new ABinder(), new ABinder()))
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("More than one");
    }

    @Test
    void eachAdvisorMatchesOnlyTheAnnotatedMethodsItsBinderOwnsAndRunsBeforeTransactions() throws Exception {
        ListenerBinders binders = ListenerBinders.of(new ABinder(), new BBinder());
        Advisor a = new Advisor(ABinder.class, binders);
        Advisor b = new Advisor(BBinder.class, binders);

        assertThat(AopUtils.canApply(a.getPointcut(), Handlers.class)).isTrue();
        assertThat(a.getPointcut().getMethodMatcher().matches(method("a"), Handlers.class))
                .isTrue();
        assertThat(a.getPointcut().getMethodMatcher().matches(method("service"), Handlers.class))
                .isTrue();
        assertThat(a.getPointcut().getMethodMatcher().matches(method("b"), Handlers.class))
                .isFalse();
        assertThat(b.getPointcut().getMethodMatcher().matches(method("b"), Handlers.class))
                .isTrue();
        assertThat(b.getPointcut().getMethodMatcher().matches(method("a"), Handlers.class))
                .isFalse();
        assertThat(b.getPointcut().getMethodMatcher().matches(method("service"), Handlers.class))
                .isFalse();
        assertThat(a.getPointcut().getMethodMatcher().matches(method("notAnnotated"), Handlers.class))
                .isFalse();
        assertThat(a.getOrder()).isEqualTo(Ordered.LOWEST_PRECEDENCE - 1);
        assertThat(a.getAdvice()).isInstanceOf(MethodInterceptor.class);
    }

    @Test
    void noBinderIsRegisteredInTheCoreAlone() {
        // The core registers none; each binder jar registers its own (see the binders' tests).
        assertThat(ListenerBinders.installed().binders()).isEmpty();
    }
}
