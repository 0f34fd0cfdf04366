package io.sumi.autoconfigure;

import io.sumi.consumer.IdempotentHandler;
import java.lang.reflect.Method;
import java.util.Set;
import org.jspecify.annotations.Nullable;
import org.springframework.aot.hint.ExecutableMode;
import org.springframework.beans.factory.aot.BeanRegistrationAotContribution;
import org.springframework.beans.factory.aot.BeanRegistrationAotProcessor;
import org.springframework.beans.factory.support.RegisteredBean;
import org.springframework.core.MethodIntrospector;
import org.springframework.core.annotation.AnnotatedElementUtils;
import org.springframework.util.ClassUtils;

/**
 * Registers the {@link IdempotentHandler} methods of every bean for reflection in an AOT-processed
 * application. At start-up Sumi reads them by reflection ({@link IdempotentHandlerVerifier}, the
 * budget checks, the binders' interceptors read the annotation on the invoked method); a native
 * image finds only the methods registered. Registered in {@code META-INF/spring/aot.factories}.
 */
final class IdempotentHandlerAotProcessor implements BeanRegistrationAotProcessor {

    @Override
    public @Nullable BeanRegistrationAotContribution processAheadOfTime(RegisteredBean registeredBean) {
        Class<?> beanClass = ClassUtils.getUserClass(registeredBean.getBeanClass());
        Set<Method> handlers = handlerMethods(beanClass);
        if (handlers.isEmpty()) {
            return null;
        }
        return (generationContext, code) -> handlers.forEach(method ->
                generationContext.getRuntimeHints().reflection().registerMethod(method, ExecutableMode.INVOKE));
    }

    static Set<Method> handlerMethods(Class<?> beanClass) {
        return MethodIntrospector.selectMethods(beanClass, (MethodIntrospector.MetadataLookup<IdempotentHandler>)
                        method -> AnnotatedElementUtils.findMergedAnnotation(method, IdempotentHandler.class))
                .keySet();
    }
}
