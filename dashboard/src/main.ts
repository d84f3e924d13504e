/** The dashboard app: the shell (App.vue), the router and the style sheet. */
import { createApp } from 'vue'
import App from './App.vue'
import { router } from './router'
import './style.css'

createApp(App).use(router).mount('#app')
