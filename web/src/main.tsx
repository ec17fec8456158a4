import { StrictMode } from 'react'
import { createRoot } from 'react-dom/client'
import { BrowserRouter, Navigate, Route, Routes, useLocation } from 'react-router'
import { AuthProvider, useAuth } from './auth'
import { I18nProvider, useT } from './i18n'
import { Layout } from './pages/Layout'
import { LoginPage } from './pages/Login'
import { ChatPage } from './pages/Chat'
import { SessionsPage } from './pages/Sessions'
import { SettingsPage } from './pages/Settings'
import { KnowledgePage } from './pages/Knowledge'
import { KnowledgeBasePage } from './pages/KnowledgeBase'
import { MemoryPage } from './pages/Memory'
import { SchedulesPage } from './pages/Schedules'
import { ChannelsPage } from './pages/Channels'
import './styles.css'

function RequireAuth({ children }: { children: React.ReactNode }) {
  const { user } = useAuth()
  const loc = useLocation()
  const t = useT()
  if (user === undefined) return <div className="splash" role="status">{t('chat.loading')}</div>
  if (user === null) {
    const next = loc.pathname + loc.search
    return <Navigate to={`/login${next && next !== '/' ? `?next=${encodeURIComponent(next)}` : ''}`} replace />
  }
  return <>{children}</>
}

function App() {
  return (
    <Routes>
      <Route path="/login" element={<LoginPage />} />
      <Route
        element={
          <RequireAuth>
            <Layout />
          </RequireAuth>
        }
      >
        <Route path="/chat" element={<ChatPage />} />
        <Route path="/chat/:id" element={<ChatPage />} />
        <Route path="/sessions" element={<SessionsPage />} />
        <Route path="/knowledge" element={<KnowledgePage />} />
        <Route path="/knowledge/:id" element={<KnowledgeBasePage />} />
        <Route path="/memory" element={<MemoryPage />} />
        <Route path="/schedules" element={<SchedulesPage />} />
        <Route path="/channels" element={<ChannelsPage />} />
        <Route path="/settings" element={<SettingsPage />} />
      </Route>
      <Route path="*" element={<Navigate to="/chat" replace />} />
    </Routes>
  )
}

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <I18nProvider>
      <AuthProvider>
        <BrowserRouter>
          <App />
        </BrowserRouter>
      </AuthProvider>
    </I18nProvider>
  </StrictMode>,
)
